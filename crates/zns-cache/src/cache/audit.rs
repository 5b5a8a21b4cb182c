//! Checks of a cache's state against its own bookkeeping (`audit`) and of
//! every cached chunk's data (`verify_all`), and the cached keys.

use std::collections::HashSet;
use std::rc::Rc;

use super::evict::ZoneState;
use super::{Cache, Policy, SpaceMode};
use crate::error::CacheError;

impl Cache {
    /// Checks the cache's invariants; returns what is wrong. Used by tests
    /// (and cheap enough to run after a run): the map and the slots agree
    /// one to one (no lost or duplicated key), per-zone counts match, the
    /// LRU holds exactly the evictable units, capacity is not exceeded.
    pub fn audit(&self) -> Result<(), String> {
        let st = self.st.borrow();
        let cpz = self.geo.chunks_per_zone;
        let mut valid_per_zone = vec![0u32; self.geo.zones as usize];
        let mut seen = 0u64;
        for (g, k) in st.space.slot_key.iter().enumerate() {
            if let Some(k) = k {
                seen += 1;
                valid_per_zone[g / cpz as usize] += 1;
                if st.map.get(k) != Some(&(g as u32)) {
                    return Err(format!(
                        "slot {g} holds key {k} but the map says {:?}",
                        st.map.get(k)
                    ));
                }
            }
        }
        if seen != st.map.len() as u64 || seen != st.space.valid {
            return Err(format!(
                "{seen} slots hold keys, the map has {} keys, the valid count is {}",
                st.map.len(),
                st.space.valid
            ));
        }
        if st.space.valid > self.geo.total_chunks {
            return Err(format!(
                "{} valid chunks exceed the {} slots",
                st.space.valid, self.geo.total_chunks
            ));
        }
        let c = &st.counters;
        let inserted = c.insert_bytes / self.geo.chunk_bytes;
        if inserted != st.space.valid + c.evicted_chunks {
            return Err(format!(
                "{inserted} chunks inserted, {} evicted, but {} valid: keys were lost or duplicated",
                c.evicted_chunks, st.space.valid
            ));
        }
        for (z, zone) in st.space.zones.iter().enumerate() {
            if zone.valid != valid_per_zone[z] {
                return Err(format!(
                    "zone {z}: valid count {} but {} slots hold keys",
                    zone.valid, valid_per_zone[z]
                ));
            }
            if self.geo.mode == SpaceMode::Log {
                if zone.valid > zone.next_slot {
                    return Err(format!(
                        "zone {z}: {} valid chunks above its write pointer {}",
                        zone.valid, zone.next_slot
                    ));
                }
                if zone.state == ZoneState::Free && (zone.valid > 0 || zone.next_slot > 0) {
                    return Err(format!("zone {z} is free but holds data"));
                }
            }
        }
        match self.cfg.policy {
            Policy::Clru => {
                if st.chunk_lru.len() as u64 != st.space.valid {
                    return Err(format!(
                        "the chunk LRU holds {} entries for {} valid chunks",
                        st.chunk_lru.len(),
                        st.space.valid
                    ));
                }
                for g in st.chunk_lru.order() {
                    if st.space.slot_key[g as usize].is_none() {
                        return Err(format!("the chunk LRU holds invalid slot {g}"));
                    }
                }
                if self.geo.mode == SpaceMode::Slots {
                    let free =
                        st.space.free_slots.len() as u64 + st.space.deferred_free.len() as u64;
                    let writing: u64 = st.space.writing();
                    if free + writing + st.space.valid != self.geo.total_chunks {
                        return Err(format!(
                            "slots: {free} free + {writing} writing + {} valid ≠ {}",
                            st.space.valid, self.geo.total_chunks
                        ));
                    }
                    let distinct: HashSet<u32> = st.space.free_slots.iter().copied().collect();
                    if distinct.len() != st.space.free_slots.len() {
                        return Err("a slot is twice in the free list".into());
                    }
                    if st
                        .space
                        .free_slots
                        .iter()
                        .any(|g| st.space.slot_key[*g as usize].is_some())
                    {
                        return Err("a free slot holds a key".into());
                    }
                }
            }
            Policy::Zplru => {
                let full: Vec<u32> = st
                    .space
                    .zones
                    .iter()
                    .enumerate()
                    .filter(|(_, z)| z.state == ZoneState::Full)
                    .map(|(i, _)| i as u32)
                    .collect();
                if full.len() != st.zone_lru.len() || full.iter().any(|z| !st.zone_lru.contains(*z))
                {
                    return Err("the zone LRU does not hold exactly the full zones".into());
                }
            }
        }
        Ok(())
    }

    /// Reads every cached chunk back and checks its bytes (needs `verify`
    /// and a data store that keeps bytes).
    pub async fn verify_all(self: &Rc<Self>) -> Result<u64, CacheError> {
        let entries: Vec<(u32, u32)> = {
            let st = self.st.borrow();
            let mut v: Vec<(u32, u32)> = st.map.iter().collect();
            v.sort_unstable();
            v
        };
        for (k, g) in &entries {
            if self.st.borrow().map.get(k) != Some(g) {
                continue; // moved or evicted meanwhile
            }
            self.pin_reader(&mut self.st.borrow_mut(), *g);
            let r = self.read_chunk(*g, *k).await;
            self.unpin_reader(&mut self.st.borrow_mut(), *g);
            r?;
        }
        Ok(entries.len() as u64)
    }

    /// The keys cached now (sorted).
    pub fn keys(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.st.borrow().map.keys().collect();
        v.sort_unstable();
        v
    }
}
