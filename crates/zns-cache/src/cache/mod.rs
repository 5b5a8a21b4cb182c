//! The cache core: the cache map (key → chunk slot, with in-flight fetch
//! dedup), the zone state manager (free → active → full, one writer per
//! zone), the eviction policies (ZPLRU, CLRU), host GC, and the eviction
//! task. Everything runs as tasks on the simulation runtime; state lives in
//! one `RefCell` that is never borrowed across an `.await`.
//!
//! # Layout
//! The cache uses `zones` zones (or block regions) of `chunks_per_zone`
//! slots; slot `s` of zone `z` is global slot `z·chunks_per_zone + s` at LBA
//! `z·stride + s·chunk_lbas`. A chunk larger than one command is moved in
//! pieces of `io_lbas`, `io_depth` pieces in flight.
//!
//! # Space modes
//! - **Log** (ZNS, and block with ZPLRU): zones fill sequentially. A writer
//!   takes an idle active zone, or opens a free one while fewer than
//!   `max_active` are active and more than `reserve` are free (fetch-first
//!   also keeps more than `zone_low` free unless no zone is active). By default
//!   ([`FetchOrder::HoldZone`], as ZNCache) a missing key's writer takes its
//!   zone first and holds it across the remote fetch and the write, so at
//!   most `max_active` misses fetch at once; [`FetchOrder::FetchFirst`]
//!   fetches first and holds the zone only while it writes. A zone
//!   whose last slot is written becomes full (finished first if its capacity
//!   has a tail that holds no chunk). While writers wait for a zone, each
//!   zone that becomes available goes to one of them drawn at random (as
//!   ZNCache's writers race for it, spinning on `zsm_get_active_zone`),
//!   never straight back to the writer that has just returned it.
//! - **Slots** (block with CLRU): every chunk slot is independent; freed
//!   slots are reused in place (FIFO); the device's FTL does the GC.
//!
//! # Policies
//! - **ZPLRU**: an LRU of full zones; a hit promotes its zone. Eviction pops
//!   the LRU zone, drops its keys, waits for its readers, resets it.
//! - **CLRU**: an LRU of chunks; a hit or insert makes the chunk MRU.
//!   Eviction invalidates LRU chunks when free chunk slots (unwritten +
//!   invalid) fall to `chunk_high`, until `chunk_low`. In log mode host GC
//!   then reclaims zones while free zones ≤ `zone_high` (until `zone_low`):
//!   the full zone with the fewest valid chunks is the victim, its valid
//!   chunks are copied to a dedicated GC zone (keeping their LRU position),
//!   the map is switched to the copies, and the victim is reset once no
//!   reader is inside. One zone is kept free for GC (inserts may not take
//!   it), so GC always has room: a victim holds fewer valid chunks than a
//!   zone. The bugs listed for ZNCache's CLRU (a GC zone never returned,
//!   relocated keys dropped from the map, stale LRU nodes, GC zones never
//!   tracked) are what `audit` checks for.
//!
//! # Eviction task
//! Wakes every `eviction_interval_ns`, or at once when a writer sees a
//! watermark crossed; one eviction round runs at a time. A writer that finds
//! no space and no round running evicts in the foreground.
//!
//! # Files
//! This module: the cache's state and the get/insert path; `config` its
//! parameters, `geometry` the layout derived from them and the device,
//! `occupancy` the writes-in-flight record, `pattern` the verified bytes;
//! `evict` the cache's space (`Space`: zones, slots, free lists), the
//! eviction task and both policies' eviction; `chunk_io` a
//! chunk's reads, writes and copies on the device; `audit` the consistency
//! checks.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use zns_sim::sync::Notify;
use zns_sim::{Handle, SimRng};

use crate::backend::ChunkDevice;
use crate::error::CacheError;
use crate::keymap::{IdMap, KeyMap};
use crate::lru::Lru;
use crate::metrics::{Counters, Histogram};
use crate::remote::RemoteFetch;

mod audit;
mod chunk_io;
mod config;
mod evict;
mod geometry;
mod occupancy;
mod pattern;

pub use config::{CacheConfig, FetchOrder, Policy};
pub use geometry::{ChunkSlots, Geometry, SpaceMode};
pub(crate) use occupancy::WriteOccupancy;
pub use pattern::fill_chunk_bytes;

use evict::{Space, ZoneState};

/// The five latencies a run records.
#[derive(Debug, Clone, Default)]
pub struct Latencies {
    pub get: Histogram,
    pub hit: Histogram,
    pub miss: Histogram,
    pub disk_read: Histogram,
    pub disk_write: Histogram,
}

struct State {
    map: KeyMap,
    pending: IdMap<Rc<Notify>>,
    /// The zones and chunk slots, who is in them and which are free.
    space: Space,
    /// Writers waiting for a zone (log mode).
    zone_wait: ZoneWait,
    zone_lru: Lru,
    chunk_lru: Lru,
    evicting: bool,
    counters: Counters,
    lat: Latencies,
    /// Gets and hits after the first eviction (steady state, as OxCache measures).
    first_eviction_ns: Option<u64>,
    steady_gets: u64,
    steady_hits: u64,
    /// Interval accumulators for the time series.
    window_get_ns: u128,
    window_gets: u64,
    window_hits: u64,
    failure: Option<String>,
    /// Chunk writes in flight, and its time integral (see [`WriteOccupancy`]).
    writes: WriteOccupancy,
}

/// Writers waiting for a zone: their tickets, and those drawn to take the
/// next zones (see `Cache::grant_zones`).
struct ZoneWait {
    waiting: Vec<u64>,
    granted: Vec<u64>,
    next_ticket: u64,
    rng: SimRng,
}

/// A writer's place among those waiting for a zone; leaves it (and passes a
/// zone drawn for it on) if the writer is dropped while waiting.
struct ZoneWaiter<'a> {
    cache: &'a Cache,
    ticket: Option<u64>,
}

impl Drop for ZoneWaiter<'_> {
    fn drop(&mut self) {
        let Some(t) = self.ticket else { return };
        if let Ok(mut st) = self.cache.st.try_borrow_mut() {
            st.zone_wait.waiting.retain(|&w| w != t);
            st.zone_wait.granted.retain(|&g| g != t);
            self.cache.grant_zones(&mut st);
        }
    }
}

/// Salt of the zone hand-off's random stream (from the run's seed).
const ZONE_HANDOFF_SEED_SALT: u64 = 0x7a6f_6e65_6861_6e64;

/// What a get found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetKind {
    Hit,
    Miss,
}

/// The cache. Shared by its worker tasks and the eviction task as `Rc<Cache>`.
pub struct Cache {
    dev: Rc<dyn ChunkDevice>,
    handle: Handle,
    geo: Geometry,
    cfg: CacheConfig,
    remote: RemoteFetch,
    st: RefCell<State>,
    /// Space changed: a zone returned or freed, a slot freed, a round ended.
    space_changed: Notify,
    /// Wakes the eviction task.
    evict_wake: Notify,
    /// A reader left a zone or slot that is being reclaimed.
    drained: Notify,
    buffers: RefCell<Vec<Vec<u8>>>,
    zeros: Vec<u8>,
    stopped: Cell<bool>,
}

const IO_WRITE: &str = "chunk write";
const IO_READ: &str = "chunk read";

impl Cache {
    /// A cache on `dev` (fresh: every zone free). Call [`Cache::prepare`]
    /// before the first get.
    pub fn new(
        handle: &Handle,
        dev: Rc<dyn ChunkDevice>,
        cfg: CacheConfig,
        remote: RemoteFetch,
    ) -> Result<Rc<Cache>, CacheError> {
        let geo = Geometry::derive(&cfg, &dev.layout(), dev.kind())?;
        let zones = geo.zones as usize;
        let total = geo.total_chunks as usize;
        let window_bytes =
            (geo.io_lbas * u64::from(geo.io_depth)).min(geo.chunk_lbas) * u64::from(geo.lba_bytes);
        let clru = cfg.policy == Policy::Clru;
        let st = State {
            map: KeyMap::default(),
            pending: IdMap::default(),
            space: Space::new(&geo),
            zone_wait: ZoneWait {
                waiting: Vec::new(),
                granted: Vec::new(),
                next_ticket: 0,
                rng: SimRng::from_seed_u64(handle.seed() ^ ZONE_HANDOFF_SEED_SALT),
            },
            zone_lru: Lru::new(if clru { 0 } else { zones }),
            chunk_lru: Lru::new(if clru { total } else { 0 }),
            evicting: false,
            counters: Counters::default(),
            lat: Latencies::default(),
            first_eviction_ns: None,
            steady_gets: 0,
            steady_hits: 0,
            window_get_ns: 0,
            window_gets: 0,
            window_hits: 0,
            failure: None,
            writes: WriteOccupancy::default(),
        };
        Ok(Rc::new(Cache {
            dev,
            handle: handle.clone(),
            geo,
            cfg,
            remote,
            st: RefCell::new(st),
            space_changed: Notify::new(),
            evict_wake: Notify::new(),
            drained: Notify::new(),
            buffers: RefCell::new(Vec::new()),
            zeros: vec![0u8; window_bytes as usize],
            stopped: Cell::new(false),
        }))
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }
    pub fn config(&self) -> &CacheConfig {
        &self.cfg
    }
    pub fn device(&self) -> &Rc<dyn ChunkDevice> {
        &self.dev
    }

    /// Resets the cache's zones that hold data (ZNS).
    pub async fn prepare(&self) -> Result<(), CacheError> {
        self.dev
            .prepare(self.geo.zones)
            .await
            .map_err(CacheError::io("zone reset before the run"))
    }

    /// Starts the background eviction task (it ends after [`Cache::stop`]).
    pub fn start_evictor(self: &Rc<Self>) {
        let me = self.clone();
        self.handle.spawn(async move { me.eviction_task().await });
    }

    /// Stops the eviction task at its next wake-up.
    pub fn stop(&self) {
        self.stopped.set(true);
        self.evict_wake.notify_one();
    }

    /// The error that stopped the cache, if any (eviction task failures).
    pub fn failure(&self) -> Option<String> {
        self.st.borrow().failure.clone()
    }

    pub fn counters(&self) -> Counters {
        self.st.borrow().counters
    }

    /// Mean chunk writes in flight and the share of time with none, from
    /// the first chunk write to `end_ns` (`None` before any write).
    pub fn write_occupancy(&self, end_ns: u64) -> Option<(f64, f64)> {
        self.st.borrow().writes.summary(end_ns)
    }

    pub fn latencies(&self) -> Latencies {
        self.st.borrow().lat.clone()
    }

    /// (count, summed ns) of the chunk reads and of the chunk writes so far,
    /// without copying the histograms: the time series' per-interval means.
    pub(crate) fn disk_latency_totals(&self) -> [(u64, u128); 2] {
        let st = self.st.borrow();
        [&st.lat.disk_read, &st.lat.disk_write].map(|h| (h.count(), h.total_ns()))
    }

    /// Hit ratio of the gets completed after the first eviction (None before).
    pub fn steady_hit_ratio(&self) -> Option<f64> {
        let st = self.st.borrow();
        (st.first_eviction_ns.is_some() && st.steady_gets > 0)
            .then(|| st.steady_hits as f64 / st.steady_gets as f64)
    }

    pub fn first_eviction_ns(&self) -> Option<u64> {
        self.st.borrow().first_eviction_ns
    }

    /// Takes (and resets) the interval accumulators: (gets, hits, summed get ns).
    pub(crate) fn take_window(&self) -> (u64, u64, u128) {
        let mut st = self.st.borrow_mut();
        let w = (st.window_gets, st.window_hits, st.window_get_ns);
        st.window_gets = 0;
        st.window_hits = 0;
        st.window_get_ns = 0;
        w
    }

    /// Free zones now (log mode: zones in the free list; slot mode: regions
    /// holding no chunk).
    pub fn free_zones(&self) -> u32 {
        let st = self.st.borrow();
        match self.geo.mode {
            SpaceMode::Log => st.space.free.len() as u32,
            SpaceMode::Slots => st
                .space
                .zones
                .iter()
                .filter(|z| z.valid == 0 && z.writing == 0)
                .count() as u32,
        }
    }

    /// The space state in one line (zones per state, open zones, free slots,
    /// valid chunks, whether a round runs), for a stall report.
    pub fn describe_space(&self) -> String {
        let st = self.st.borrow();
        let count = |s: ZoneState| st.space.count(s);
        format!(
            "zones free {} / active {} / writing {} / full {} / reclaiming {}{}; open for inserts {}, idle {}, GC zone {}; free slots {}; valid chunks {} of {}; eviction round running: {}",
            count(ZoneState::Free),
            count(ZoneState::Active),
            count(ZoneState::Writing),
            count(ZoneState::Full),
            count(ZoneState::Reclaiming),
            st.space.zones
                .iter()
                .enumerate()
                .filter(|(_, z)| z.state == ZoneState::Reclaiming)
                .map(|(i, z)| format!(" (zone {i}: {} readers, {} valid)", z.readers, z.valid))
                .collect::<String>(),
            st.space.insert_active,
            st.space.idle_active.len(),
            match st.space.gc_zone {
                Some(z) => format!(
                    "{z} ({} of {} slots written)",
                    st.space.zones[z as usize].next_slot, self.geo.chunks_per_zone
                ),
                None => "none".into(),
            },
            st.space.free_slots.len(),
            st.space.valid,
            self.geo.total_chunks,
            st.evicting
        )
    }

    /// Valid chunks (mapped keys).
    pub fn valid_chunks(&self) -> u64 {
        self.st.borrow().space.valid
    }

    // ---------------------------------------------------------------- get

    /// Serves one request: a hit reads the chunk; a miss fetches it from the
    /// remote store (once per key: concurrent requests for it wait) and
    /// writes it into the cache.
    pub async fn get(self: &Rc<Self>, key: u32) -> Result<GetKind, CacheError> {
        let t0 = self.handle.now_ns();
        enum Look {
            Hit(u32),
            Wait(Rc<Notify>),
            Fetch,
        }
        let mut waited = false;
        loop {
            let look = {
                let mut st = self.st.borrow_mut();
                if let Some(&g) = st.map.get(&key) {
                    self.pin_reader(&mut st, g);
                    Look::Hit(g)
                } else if let Some(n) = st.pending.get(&key) {
                    Look::Wait(n.clone())
                } else {
                    st.pending.insert(key, Rc::new(Notify::new()));
                    Look::Fetch
                }
            };
            match look {
                Look::Hit(g) => {
                    let r = self.read_chunk(g, key).await;
                    let mut st = self.st.borrow_mut();
                    self.unpin_reader(&mut st, g);
                    r?;
                    if st.map.get(&key) == Some(&g) {
                        match self.cfg.policy {
                            Policy::Zplru => st.zone_lru.touch(g / self.geo.chunks_per_zone),
                            Policy::Clru => st.chunk_lru.touch(g),
                        }
                    }
                    let now = self.handle.now_ns();
                    self.record_get(&mut st, GetKind::Hit, now - t0, waited);
                    return Ok(GetKind::Hit);
                }
                Look::Wait(n) => {
                    waited = true;
                    n.notified().await;
                }
                Look::Fetch => break,
            }
        }
        // Miss: fetch from the remote store and write the chunk, the fetch
        // before or after taking space (`FetchOrder`).
        let r = match self.cfg.fetch_order {
            FetchOrder::FetchFirst => {
                self.fetch_remote().await;
                self.insert(key, false).await
            }
            FetchOrder::HoldZone => self.insert(key, true).await,
        };
        let waiters = {
            let mut st = self.st.borrow_mut();
            let w = st.pending.remove(&key);
            if r.is_ok() {
                let now = self.handle.now_ns();
                self.record_get(&mut st, GetKind::Miss, now - t0, waited);
            }
            w
        };
        if let Some(n) = waiters {
            n.notify_waiters();
        }
        r.map(|()| GetKind::Miss)
    }

    fn record_get(&self, st: &mut State, kind: GetKind, ns: u64, waited: bool) {
        let c = &mut st.counters;
        c.gets += 1;
        c.get_bytes += self.geo.chunk_bytes;
        if waited {
            c.coalesced += 1;
        }
        st.lat.get.record(ns);
        st.window_gets += 1;
        st.window_get_ns += u128::from(ns);
        let steady = st.first_eviction_ns.is_some();
        if steady {
            st.steady_gets += 1;
        }
        match kind {
            GetKind::Hit => {
                st.counters.hits += 1;
                st.window_hits += 1;
                if steady {
                    st.steady_hits += 1;
                }
                st.lat.hit.record(ns);
            }
            GetKind::Miss => {
                st.counters.misses += 1;
                st.lat.miss.record(ns);
            }
        }
    }

    fn pin_reader(&self, st: &mut State, g: u32) {
        st.space.zones[(g / self.geo.chunks_per_zone) as usize].readers += 1;
        if self.geo.mode == SpaceMode::Slots {
            *st.space.slot_readers.entry(g).or_insert(0) += 1;
        }
    }

    fn unpin_reader(&self, st: &mut State, g: u32) {
        let z = (g / self.geo.chunks_per_zone) as usize;
        st.space.zones[z].readers = st.space.zones[z].readers.saturating_sub(1);
        if st.space.zones[z].readers == 0 && st.space.zones[z].state == ZoneState::Reclaiming {
            self.drained.notify_waiters();
        }
        if self.geo.mode == SpaceMode::Slots {
            let left = match st.space.slot_readers.get_mut(&g) {
                Some(n) => {
                    *n -= 1;
                    *n
                }
                None => 0,
            };
            if left == 0 {
                st.space.slot_readers.remove(&g);
                if st.space.deferred_free.remove(&g) {
                    st.space.free_slots.push_back(g);
                    self.space_changed.notify_waiters();
                }
            }
        }
    }

    // ------------------------------------------------------------ chunk I/O

    // -------------------------------------------------------------- inserts

    /// Sleeps the remote store's latency for one chunk.
    async fn fetch_remote(&self) {
        let ns = self.remote.next_ns();
        if ns > 0 {
            self.handle.sleep(ns).await;
        }
    }

    /// Takes space for `key` (a slot of an active zone, or a free slot),
    /// fetches it there first when `fetch` is set, writes it and maps it.
    async fn insert(self: &Rc<Self>, key: u32, fetch: bool) -> Result<(), CacheError> {
        match self.geo.mode {
            SpaceMode::Log => {
                let z = self.acquire_zone().await?;
                if fetch {
                    self.fetch_remote().await;
                }
                let s = self.st.borrow().space.zones[z as usize].next_slot;
                let g = z * self.geo.chunks_per_zone + s;
                let mut r = self.write_chunk(g, key).await;
                let last = s + 1 == self.geo.chunks_per_zone;
                if r.is_ok() && last && self.geo.finish_full_zones {
                    r = self
                        .dev
                        .finish_zone(self.geo.zone_slba(z))
                        .await
                        .map_err(CacheError::io("zone finish"));
                }
                let mut st = self.st.borrow_mut();
                if r.is_ok() {
                    self.publish(&mut st, key, g);
                }
                st.space.zones[z as usize].next_slot += 1;
                self.return_zone(&mut st, z, false);
                drop(st);
                self.space_changed.notify_waiters();
                r
            }
            SpaceMode::Slots => {
                let g = self.acquire_slot().await?;
                if fetch {
                    self.fetch_remote().await;
                }
                let r = self.write_chunk(g, key).await;
                let mut st = self.st.borrow_mut();
                st.space.zones[(g / self.geo.chunks_per_zone) as usize].writing -= 1;
                match &r {
                    Ok(()) => self.publish(&mut st, key, g),
                    Err(_) => st.space.free_slots.push_back(g),
                }
                drop(st);
                self.space_changed.notify_waiters();
                r
            }
        }
    }

    fn publish(&self, st: &mut State, key: u32, g: u32) {
        st.space.slot_key[g as usize] = Some(key);
        st.map.insert(key, g);
        st.space.zones[(g / self.geo.chunks_per_zone) as usize].valid += 1;
        st.space.valid += 1;
        st.counters.insert_bytes += self.geo.chunk_bytes;
        if self.cfg.policy == Policy::Clru {
            st.chunk_lru.push_back(g);
        }
    }

    /// A writer leaves zone `z` after writing one slot.
    fn return_zone(&self, st: &mut State, z: u32, gc: bool) {
        let zi = z as usize;
        if st.space.zones[zi].next_slot >= self.geo.chunks_per_zone {
            st.space.zones[zi].state = ZoneState::Full;
            if gc {
                st.space.gc_zone = None;
            } else {
                st.space.insert_active -= 1;
            }
            if self.cfg.policy == Policy::Zplru {
                st.zone_lru.push_back(z);
            }
        } else if gc {
            st.space.zones[zi].state = ZoneState::Writing; // stays the GC zone
        } else {
            st.space.zones[zi].state = ZoneState::Active;
            st.space.idle_active.push_back(z);
        }
    }

    fn wants_eviction(&self, st: &State) -> bool {
        match (self.cfg.policy, self.geo.mode) {
            (Policy::Zplru, _) => st.space.free.len() as u32 <= self.cfg.zone_high,
            (Policy::Clru, SpaceMode::Slots) => {
                st.space.free_slots.len() as u64 <= self.geo.chunk_high
            }
            (Policy::Clru, SpaceMode::Log) => {
                self.geo.total_chunks - st.space.valid <= self.geo.chunk_high
                    || st.space.free.len() as u32 <= self.cfg.zone_high
            }
        }
    }

    /// Zones a writer could take now: idle active zones, plus the free
    /// zones it may open (while fewer than `max_active` are active and more
    /// than the reserve are free; fetch-first opens one at a time, and only
    /// while that keeps the free-zone target — or when no zone is open).
    fn zones_available(&self, st: &State) -> usize {
        let free = st.space.free.len() as u32;
        let room = self.geo.max_active.saturating_sub(st.space.insert_active);
        let spare = free.saturating_sub(self.geo.reserve_zones);
        // Fetch-first: a burst of writers would otherwise spread over every
        // zone, fill them all at once, and ZPLRU would evict the zones that
        // just filled. Hold-zone (ZNCache's `zsm_get_active_zone`): open one
        // whenever a zone is free, since an active zone is a miss in flight
        // and the limit is the fetch concurrency.
        let openable = match self.cfg.fetch_order {
            FetchOrder::FetchFirst => u32::from(
                room > 0 && spare > 0 && (free > self.cfg.zone_low || st.space.insert_active == 0),
            ),
            FetchOrder::HoldZone => room.min(spare),
        };
        st.space.idle_active.len() + openable as usize
    }

    /// Hands the zones available to writers that wait for one, each to a
    /// waiter drawn at random (ZNCache's writers spin on
    /// `zsm_get_active_zone` with `g_thread_yield`: whichever spinner the
    /// scheduler runs next wins, not the one that waited longest, nor the
    /// writer that has just returned a zone). Wakes the waiters if any was
    /// granted.
    fn grant_zones(&self, st: &mut State) {
        let available = self.zones_available(st);
        let z = &mut st.zone_wait;
        let mut granted = false;
        while z.granted.len() < available && !z.waiting.is_empty() {
            let i = z.rng.below_u64(z.waiting.len() as u64) as usize;
            let t = z.waiting.swap_remove(i);
            z.granted.push(t);
            granted = true;
        }
        if granted {
            self.space_changed.notify_waiters();
        }
    }

    /// Takes an idle active zone or opens a free one, for one writer.
    fn take_zone(&self, st: &mut State) -> Option<u32> {
        if let Some(z) = st.space.idle_active.pop_front() {
            st.space.zones[z as usize].state = ZoneState::Writing;
            return Some(z);
        }
        if self.zones_available(st) == 0 {
            return None;
        }
        let z = st.space.free.pop_front()?;
        st.space.zones[z as usize].state = ZoneState::Writing;
        st.space.insert_active += 1;
        if self.wants_eviction(st) {
            self.evict_wake.notify_one();
        }
        Some(z)
    }

    /// A zone for one insert: at once when one is available and nobody
    /// waits; otherwise the writer joins the waiters and takes a zone when
    /// [`Cache::grant_zones`] draws it, evicting in the foreground when no
    /// zone can come otherwise.
    async fn acquire_zone(self: &Rc<Self>) -> Result<u32, CacheError> {
        enum Next {
            Wait,
            Evict,
        }
        let mut waiter = ZoneWaiter {
            cache: self,
            ticket: None,
        };
        loop {
            let ticket = waiter.ticket;
            let next = {
                let mut st = self.st.borrow_mut();
                if let Some(f) = &st.failure {
                    return Err(CacheError::Internal(format!("eviction failed: {f}")));
                }
                if ticket.is_some() {
                    self.grant_zones(&mut st);
                }
                let may_take = match ticket {
                    None => st.zone_wait.waiting.is_empty() && st.zone_wait.granted.is_empty(),
                    Some(t) => st.zone_wait.granted.contains(&t),
                };
                if may_take {
                    if let Some(z) = self.take_zone(&mut st) {
                        if let Some(t) = waiter.ticket.take() {
                            st.zone_wait.granted.retain(|&g| g != t);
                        }
                        // more zones than grants: hand the next ones out
                        self.grant_zones(&mut st);
                        return Ok(z);
                    }
                }
                if ticket.is_none() {
                    let t = st.zone_wait.next_ticket;
                    st.zone_wait.next_ticket += 1;
                    st.zone_wait.waiting.push(t);
                    waiter.ticket = Some(t);
                    self.grant_zones(&mut st);
                    if st.zone_wait.granted.contains(&t) {
                        continue;
                    }
                }
                self.evict_wake.notify_one();
                // a zone drawn for another writer is that writer's to take
                // (it has been woken): wait for it rather than evict
                let drawn_for_another = st.zone_wait.granted.iter().any(|&g| Some(g) != ticket);
                if st.space.insert_active > 0 || st.evicting || drawn_for_another {
                    Next::Wait
                } else {
                    Next::Evict
                }
            };
            match next {
                Next::Wait => self.space_changed.notified().await,
                Next::Evict => {
                    if !self.evict_round(true).await? {
                        let st = self.st.borrow();
                        if st.space.free.len() as u32 <= self.geo.reserve_zones
                            && st.space.idle_active.is_empty()
                            && st.space.insert_active == 0
                            && !st.evicting
                        {
                            return Err(CacheError::Internal(
                                "no zone for a write and eviction could free none".into(),
                            ));
                        }
                    }
                }
            }
        }
    }

    async fn acquire_slot(self: &Rc<Self>) -> Result<u32, CacheError> {
        loop {
            let evict = {
                let mut st = self.st.borrow_mut();
                if let Some(f) = &st.failure {
                    return Err(CacheError::Internal(format!("eviction failed: {f}")));
                }
                if let Some(g) = st.space.free_slots.pop_front() {
                    st.space.zones[(g / self.geo.chunks_per_zone) as usize].writing += 1;
                    if self.wants_eviction(&st) {
                        self.evict_wake.notify_one();
                    }
                    return Ok(g);
                }
                self.evict_wake.notify_one();
                !st.evicting
            };
            if evict {
                if !self.evict_round(true).await? {
                    let (has_free, stuck) = {
                        let st = self.st.borrow();
                        let writing: u64 = st.space.writing();
                        let has_free = !st.space.free_slots.is_empty();
                        let stuck = !has_free
                            && st.space.deferred_free.is_empty()
                            && writing == 0
                            && !st.evicting;
                        (has_free, stuck)
                    };
                    if stuck {
                        return Err(CacheError::Internal(
                            "no chunk slot for a write and eviction could free none".into(),
                        ));
                    }
                    if !has_free {
                        self.space_changed.notified().await;
                    }
                }
            } else {
                self.space_changed.notified().await;
            }
        }
    }

    // ------------------------------------------------------------- eviction

    // ---------------------------------------------------------------- audit
}
