//! Running the cache: open the device (zns-target: a profile and a
//! namespace, or a RAID array) and wrap it in a backend (zoned → ZNS
//! backend, conventional → block backend), precondition it if asked,
//! build the workload, start N worker tasks and the eviction task on one
//! deterministic runtime, sample the time series every interval of virtual
//! time, and summarise.
//!
//! Workers take the next request of the workload in global order (as
//! ZNCache's workers do under a mutex) until the workload (times
//! `--iterations`) or the virtual duration is used up.

use std::cell::Cell;
use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;

use serde::Serialize;
use zns_core::{BlockDevice, IoFlags, ZonedDevice};
use zns_device::{Controller, StoreKind};
use zns_sim::sync::Notify;
use zns_sim::timing::HostStack;
use zns_sim::{Handle, Runtime, SimRng};
use zns_target::{OpenOptions, OpenedDevice, Target, TargetSpec};

use crate::backend::{BackendKind, BlockBackend, ChunkDevice, ZnsBackend, ZnsWrite};
use crate::cache::{Cache, CacheConfig, Geometry};
use crate::error::CacheError;
use crate::metrics::{Counters, FlashCounters, LatencySummary, Sample};
use crate::remote::{RemoteFetch, RemoteLatency};

/// Mixed into the run's seed for the remote store's latency draws ("remote").
const REMOTE_SEED_SALT: u64 = 0x7265_6d6f_7465;
use crate::workload::{Distribution, Workload};

/// ZNCache's region size on block devices: the ZN540's zone capacity.
pub const DEFAULT_REGION_BYTES: u64 = 1_129_316_352;

/// How the device is filled before the run (the paper's runs started from a
/// full drive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Precondition {
    None,
    /// Write every block once, sequentially (ZNS: fill the cache's zones;
    /// the cache resets them before the run).
    Sequential,
    /// Block devices: 64 KiB writes over the whole namespace in random
    /// order (the paper's `fio randwrite bs=64k size=100%`) on a fresh
    /// device; ZNS: as sequential.
    Random,
    /// Block devices: two such random passes, the second over a full drive,
    /// so its GC runs and the drive starts in a random-write steady state
    /// (the paper's per-run fio pass over a drive its earlier runs had
    /// filled and nothing trimmed); ZNS: as sequential.
    RandomSteady,
}

impl Precondition {
    pub fn parse(s: &str) -> Result<Precondition, CacheError> {
        match s {
            "none" => Ok(Precondition::None),
            "seq" | "sequential" | "fill" => Ok(Precondition::Sequential),
            "random" | "rand" => Ok(Precondition::Random),
            "random-steady" | "steady" => Ok(Precondition::RandomSteady),
            o => Err(CacheError::Param(format!(
                "precondition `{o}`: expected none, sequential, random or random-steady"
            ))),
        }
    }
}

/// Which device (zns-target opens it) and how the cache uses it.
#[derive(Debug, Clone)]
pub struct DeviceSpec {
    /// A profile, or a RAID array of zoned devices (its namespace 1, run
    /// under the ZNS backend).
    pub target: TargetSpec,
    /// Namespace (1-based); `None` = the first zoned namespace, else the first.
    pub nsid: Option<u32>,
    pub store: StoreKind,
    /// `None`: io_uring + mq-deadline on ZNS, io_uring + none on block (the
    /// paper's set-up). An array's members take theirs from its spec.
    pub host_stack: Option<HostStack>,
    /// Block backend region size (default 1077 MiB).
    pub region_bytes: Option<u64>,
    /// Block backend: deallocate evicted regions and slots (ZNCache does not).
    pub discard: bool,
    pub zns_write: ZnsWrite,
    pub precondition: Precondition,
}

impl DeviceSpec {
    /// The device's name in reports: the profile, or the array
    /// (`raid:5xzn540,variant=zraid,chunk=65536`).
    pub fn name(&self) -> String {
        self.target.name()
    }

    /// A profile's device or an array (`RaidSpec`), timing only.
    pub fn new(target: impl Into<TargetSpec>) -> DeviceSpec {
        DeviceSpec {
            target: target.into(),
            nsid: None,
            store: StoreKind::None,
            host_stack: None,
            region_bytes: None,
            discard: false,
            zns_write: ZnsWrite::WritePointer,
            precondition: Precondition::None,
        }
    }
}

/// Where the requests come from.
#[derive(Debug, Clone)]
pub enum WorkloadSpec {
    /// Generated for the cache's size: `ids = cache chunks × ratio`.
    Generated {
        distribution: Distribution,
        ratio: f64,
        requests: u64,
        seed: u64,
    },
    /// Given ids (a workload file or a trace).
    Ids(Workload),
}

/// One cache run.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub device: DeviceSpec,
    pub cache: CacheConfig,
    pub workload: WorkloadSpec,
    pub workers: u32,
    pub remote: RemoteLatency,
    /// Passes over the workload (ZNCache's `-i` counts requests; here whole passes).
    pub iterations: u32,
    /// Stop issuing requests after this much virtual time.
    pub duration_ns: Option<u64>,
    /// Time-series interval.
    pub interval_ns: u64,
    /// Runtime seed (device jitter, tie order).
    pub seed: u64,
    /// Check the cache's invariants at every sample (tests).
    pub audit: bool,
    /// Start the workers out of step (a diagnostic, not ZNCache's
    /// behaviour): worker `w` starts `w × fetch / zones` after the start,
    /// `fetch` the mean remote fetch time and `zones` the zones written at
    /// once, so the first zone holders are spread over one fetch instead of
    /// all fetching, then writing, together (docs/zncache.md, "in step").
    pub stagger_start: bool,
}

impl RunSpec {
    pub fn new(device: DeviceSpec, cache: CacheConfig, workload: WorkloadSpec) -> RunSpec {
        RunSpec {
            device,
            cache,
            workload,
            workers: 64,
            remote: RemoteLatency::Measured,
            iterations: 1,
            duration_ns: None,
            interval_ns: 1_000_000_000,
            seed: 0,
            audit: false,
            stagger_start: false,
        }
    }
}

/// What a progress callback sees.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub virtual_ns: u64,
    pub done: u64,
    pub total: u64,
    pub hit_ratio: f64,
}

/// The result of a run.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub device: String,
    pub nsid: u32,
    pub backend: BackendKind,
    pub policy: crate::cache::Policy,
    pub geometry: Geometry,
    pub workers: u32,
    /// Mean remote fetch latency, and its standard deviation (0: constant).
    pub remote_fetch_ms: f64,
    pub remote_fetch_std_ms: f64,
    /// Whether a miss held its zone across the fetch (ZNCache) or fetched first.
    pub fetch_order: crate::cache::FetchOrder,
    /// Whether the workers started out of step ([`RunSpec::stagger_start`]).
    pub stagger_start: bool,
    pub workload: String,
    pub requests: u64,
    pub seed: u64,
    /// Virtual time from the first request to the last completion, s.
    pub duration_s: f64,
    pub counters: Counters,
    pub hit_ratio: f64,
    /// Hit ratio after the first eviction (steady state), if any eviction happened.
    pub steady_hit_ratio: Option<f64>,
    pub first_eviction_s: Option<f64>,
    pub get: LatencySummary,
    pub hit: LatencySummary,
    pub miss: LatencySummary,
    pub disk_read: LatencySummary,
    pub disk_write: LatencySummary,
    pub gets_per_s: f64,
    pub get_gib_s: f64,
    pub read_gib_s: f64,
    pub write_gib_s: f64,
    pub host_waf: f64,
    /// Device write amplification (flash ÷ host writes), when the device counts them.
    pub device_waf: Option<f64>,
    pub flash: Option<FlashCounters>,
    pub min_free_zones: u32,
    /// Chunk writes in flight on average from the first write to the end,
    /// and the share of that time with none in flight (the device idle for
    /// writes: writers that move in step all fetch at once).
    pub writes_in_flight_mean: Option<f64>,
    pub write_idle_share: Option<f64>,
    pub samples: Vec<Sample>,
}

const GIB: f64 = (1u64 << 30) as f64;

/// The time series' windowed device WAF spans this many intervals: an FTL
/// counts a GC victim's whole relocation when it picks it, so a single
/// interval's WAF comes in spikes.
pub const DEVICE_WAF_WINDOW_INTERVALS: usize = 30;

/// A backend plus what the report needs about it.
pub struct OpenDevice {
    pub dev: Rc<dyn ChunkDevice>,
    /// The device's controller; `None` for an array (its members are
    /// inside it).
    pub controller: Option<Controller>,
    pub nsid: u32,
}

fn default_stack(kind: BackendKind) -> HostStack {
    match kind {
        BackendKind::Zns => HostStack::IoUringMqDeadline,
        BackendKind::Block => HostStack::IoUringNone,
    }
}

/// Builds the block backend over any `BlockDevice` (an FTL device with
/// counters adds them with `BlockBackend::with_flash_counters`).
pub fn block_backend<B: BlockDevice + 'static>(
    dev: B,
    spec: &DeviceSpec,
) -> Result<Rc<dyn ChunkDevice>, CacheError> {
    let b = BlockBackend::new(
        dev,
        spec.region_bytes.unwrap_or(DEFAULT_REGION_BYTES),
        spec.discard,
    )?;
    Ok(Rc::new(b))
}

/// Opens the device a spec names (zns-target; an array is created on
/// `rt`) and wraps it in the backend its namespace calls for.
pub fn open_device(rt: &mut Runtime, spec: &DeviceSpec) -> Result<OpenDevice, CacheError> {
    let device_err = |e: String| CacheError::Device(e);
    match &spec.target {
        TargetSpec::Profile(_) => {}
        TargetSpec::Raid(_) => {
            if spec.nsid.is_some() {
                return Err(device_err(
                    "--nsid does not apply to a RAID array (its members' first zoned namespaces are used)"
                        .into(),
                ));
            }
            if spec.precondition != Precondition::None {
                return Err(device_err(
                    "--precondition is not supported on a RAID array (the cache resets its zones anyway)"
                        .into(),
                ));
            }
        }
        TargetSpec::Image(_) | TargetSpec::Linux(_) => {
            return Err(device_err(format!(
                "{}: the cache runs on emulated profiles and RAID arrays of them (virtual time, data it may overwrite)",
                spec.name()
            )))
        }
    }
    let opts = OpenOptions {
        store: spec.store,
        ..OpenOptions::default()
    };
    let opened = zns_target::open(rt, &spec.target, &opts)?;
    let nsid = spec.nsid.unwrap_or_else(|| opened.default_nsid());
    let target = opened.target(&spec.name(), Some(nsid))?;
    let kind = match target {
        Target::Zoned(_) => BackendKind::Zns,
        Target::Block(_) => BackendKind::Block,
    };
    opened.set_host_stack(spec.host_stack.unwrap_or(default_stack(kind)));
    let controller = match &opened {
        OpenedDevice::Controller(c) => Some(c.clone()),
        _ => None,
    };
    // Without a data store there is nothing to look at in what is read: the
    // device need not zero every chunk buffer (same timing and numbers).
    if let (Some(c), StoreKind::None) = (&controller, spec.store) {
        c.set_zero_fill_reads(false);
    }
    let dev: Rc<dyn ChunkDevice> = match target {
        Target::Zoned(z) => Rc::new(ZnsBackend::new(z, spec.zns_write)),
        Target::Block(b) => {
            // An FTL namespace counts host and flash writes: the device WAF hook.
            let ftl = controller
                .as_ref()
                .and_then(|c| c.conventional(nsid))
                .filter(|c| c.ftl_stats().is_some());
            match ftl {
                Some(probe) => {
                    let backend = BlockBackend::new(
                        b,
                        spec.region_bytes.unwrap_or(DEFAULT_REGION_BYTES),
                        spec.discard,
                    )?
                    .with_flash_counters(move || {
                        let s = probe.ftl_stats().unwrap_or_default();
                        FlashCounters {
                            host_write_bytes: s.host_bytes_written,
                            flash_write_bytes: s.flash_bytes_written,
                        }
                    });
                    Rc::new(backend)
                }
                None => block_backend(b, spec)?,
            }
        }
    };
    Ok(OpenDevice {
        dev,
        controller,
        nsid,
    })
}

/// The order in which a block precondition writes its `units` 64 KiB
/// units: once each in LBA order (sequential), once each in a random order
/// (random), or two such passes (random-steady). `rng` is called only for
/// the random orders (the sequential fill takes no stream).
pub fn precondition_order(
    units: u64,
    mode: Precondition,
    rng: impl FnOnce() -> SimRng,
) -> Vec<u64> {
    let passes = match mode {
        Precondition::None => 0,
        Precondition::RandomSteady => 2,
        Precondition::Sequential | Precondition::Random => 1,
    };
    let mut rng = matches!(mode, Precondition::Random | Precondition::RandomSteady).then(rng);
    let mut order: Vec<u64> = Vec::with_capacity((units * passes) as usize);
    for _ in 0..passes {
        let mut pass: Vec<u64> = (0..units).collect();
        if let Some(rng) = rng.as_mut() {
            for i in (1..pass.len()).rev() {
                let j = rng.below_u64(i as u64 + 1) as usize;
                pass.swap(i, j);
            }
        }
        order.extend(pass);
    }
    order
}

/// Fills the device before the run (untimed for the run's statistics; the
/// virtual clock moves on).
async fn precondition(
    handle: &Handle,
    ctrl: &Controller,
    nsid: u32,
    mode: Precondition,
    zones: u32,
) -> Result<(), CacheError> {
    if mode == Precondition::None {
        return Ok(());
    }
    if let Some(z) = ctrl.zoned(nsid) {
        let cfg = z.config().clone();
        let piece = u64::from(cfg.max_transfer_lbas).min(cfg.zone_capacity_lbas);
        let data = vec![0u8; (piece * u64::from(cfg.lba_bytes)) as usize];
        for zone in 0..zones.min(cfg.zone_count) {
            let start = u64::from(zone) * cfg.zone_size_lbas;
            let mut off = 0;
            while off < cfg.zone_capacity_lbas {
                let n = piece.min(cfg.zone_capacity_lbas - off);
                let bytes = (n * u64::from(cfg.lba_bytes)) as usize;
                z.write(start + off, &data[..bytes], IoFlags::NONE)
                    .await
                    .map_err(CacheError::io("precondition write"))?;
                off += n;
            }
        }
        return Ok(());
    }
    let Some(b) = ctrl.conventional(nsid) else {
        return Ok(());
    };
    let lba = u64::from(b.lba_bytes());
    let unit = ((64u64 << 10) / lba)
        .max(1)
        .min(u64::from(b.max_transfer_lbas()));
    let units = b.capacity_lbas() / unit;
    let order = precondition_order(units, mode, || handle.rng());
    // 32 writers at a time.
    let order = Rc::new(order);
    let next = Rc::new(Cell::new(0usize));
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let (b, order, next) = (b.clone(), order.clone(), next.clone());
        tasks.push(handle.spawn(async move {
            let data = vec![0u8; (unit * lba) as usize];
            loop {
                let i = next.get();
                if i >= order.len() {
                    return Ok(());
                }
                next.set(i + 1);
                b.write(order[i] * unit, &data, IoFlags::NONE).await?;
            }
        }));
    }
    for t in tasks {
        t.await.map_err(|e| CacheError::Io {
            op: "precondition write",
            err: e,
        })?;
    }
    Ok(())
}

fn flash_counters_of(dev: &Rc<dyn ChunkDevice>) -> Option<FlashCounters> {
    dev.flash_counters()
}

/// Runs a cache workload and reports.
pub fn run_cache(
    spec: &RunSpec,
    progress: &mut dyn FnMut(&Progress),
) -> Result<RunReport, CacheError> {
    if spec.workers == 0 {
        return Err(CacheError::Param("--workers 0: at least one worker".into()));
    }
    if spec.interval_ns == 0 {
        return Err(CacheError::Param(
            "--interval 0: the time series needs an interval".into(),
        ));
    }
    if spec.iterations == 0 {
        return Err(CacheError::Param(
            "--iterations 0: at least one pass".into(),
        ));
    }
    if spec.duration_ns == Some(0) {
        return Err(CacheError::Param("--duration 0: nothing would run".into()));
    }
    if let WorkloadSpec::Generated {
        ratio, requests, ..
    } = &spec.workload
    {
        if !(ratio.is_finite() && *ratio > 0.0) {
            return Err(CacheError::Param(format!(
                "--ratio {ratio}: the working set ÷ cache size must be > 0 (2 for 1:2, 10 for 1:10)"
            )));
        }
        if *requests == 0 {
            return Err(CacheError::Param("--requests 0: nothing to run".into()));
        }
    }
    let mut rt = Runtime::new(spec.seed);
    let handle = rt.handle();
    let open = open_device(&mut rt, &spec.device)?;
    let remote_ns = spec.remote.fetch_ns(spec.cache.chunk_bytes);
    let remote = RemoteFetch::new(
        remote_ns,
        spec.remote.spread_ns(spec.cache.chunk_bytes),
        spec.seed ^ REMOTE_SEED_SALT,
    );
    let cache = Cache::new(&handle, open.dev.clone(), spec.cache.clone(), remote)?;
    let geo = *cache.geometry();
    let workload = match &spec.workload {
        WorkloadSpec::Generated {
            distribution,
            ratio,
            requests,
            seed,
        } => {
            let ids = ((geo.total_chunks as f64) * ratio).ceil().max(1.0) as u64;
            Workload::generate(*distribution, ids, *requests, *seed)?
        }
        WorkloadSpec::Ids(w) => {
            if w.ids.is_empty() {
                return Err(CacheError::Workload(format!("{}: no requests", w.origin)));
            }
            w.clone()
        }
    };
    let total = workload.ids.len() as u64 * u64::from(spec.iterations);
    // Precondition and prepare (reset the cache's zones), then t = 0.
    {
        if let Some(ctrl) = open.controller.clone() {
            let h = handle.clone();
            let (mode, nsid, zones) = (spec.device.precondition, open.nsid, geo.zones);
            rt.block_on(async move { precondition(&h, &ctrl, nsid, mode, zones).await })?;
        }
        let c = cache.clone();
        rt.block_on(async move { c.prepare().await })?;
    }
    let t0 = rt.now_ns();
    let end_ns = spec.duration_ns.map(|d| t0.saturating_add(d));
    let flash0 = flash_counters_of(&open.dev);
    cache.start_evictor();
    let ids = Rc::new(workload.ids);
    let next = Rc::new(Cell::new(0u64));
    let live = Rc::new(Cell::new(spec.workers));
    let last_done_ns = Rc::new(Cell::new(t0));
    let failure: Rc<std::cell::RefCell<Option<CacheError>>> = Rc::default();
    let all_done = Rc::new(Notify::new());
    // out of step (diagnostic): one start every fetch / zones written at once
    let stagger_ns = if spec.stagger_start {
        remote_ns / u64::from(geo.max_active.max(1))
    } else {
        0
    };
    for w in 0..spec.workers {
        let done = all_done.clone();
        let start_ns = t0.saturating_add(u64::from(w).saturating_mul(stagger_ns));
        let (cache, ids, next, live, last, failure, h) = (
            cache.clone(),
            ids.clone(),
            next.clone(),
            live.clone(),
            last_done_ns.clone(),
            failure.clone(),
            handle.clone(),
        );
        handle.spawn(async move {
            if start_ns > t0 {
                h.sleep_until(start_ns).await;
            }
            loop {
                let i = next.get();
                let over = end_ns.is_some_and(|e| h.now_ns() >= e);
                if i >= total || over || failure.borrow().is_some() {
                    break;
                }
                next.set(i + 1);
                let key = ids[(i % ids.len() as u64) as usize];
                if let Err(e) = cache.get(key).await {
                    failure.borrow_mut().get_or_insert(e);
                    break;
                }
            }
            last.set(h.now_ns());
            live.set(live.get() - 1);
            if live.get() == 0 {
                done.notify_waiters();
            }
        });
    }
    // Sample every interval until every worker is done.
    let mut samples = Vec::new();
    let mut prev = cache.counters();
    let mut recent_flash = VecDeque::from([flash0]);
    let mut prev_disk = cache.disk_latency_totals();
    let mut prev_t = t0;
    let mut min_free = cache.free_zones();
    let stall_ns = (600_000_000_000u64).max(remote_ns.saturating_mul(50));
    let mut last_progress = (0u64, t0);
    loop {
        let next_t = prev_t + spec.interval_ns;
        let (l, h, d) = (live.clone(), handle.clone(), all_done.clone());
        rt.block_on(async move {
            // Wake at the interval, or earlier once every worker is done.
            if l.get() == 0 {
                return;
            }
            let mut sleep = pin!(h.sleep_until(next_t));
            let mut done = pin!(d.notified());
            poll_fn(|cx| {
                if sleep.as_mut().poll(cx).is_ready() || done.as_mut().poll(cx).is_ready() {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await
        });
        let now = if live.get() == 0 {
            last_done_ns.get().max(prev_t)
        } else {
            rt.now_ns()
        };
        let c = cache.counters();
        let (wg, wh, wns) = cache.take_window();
        let dt = (now - prev_t) as f64 / 1e9;
        let rate = |a: u64, b: u64| if dt > 0.0 { (a - b) as f64 / dt } else { 0.0 };
        let free = cache.free_zones();
        min_free = min_free.min(free);
        let flash = flash_counters_of(&open.dev);
        let waf_since = |from: Option<FlashCounters>| match (from, flash) {
            (Some(a), Some(b)) => b.since(&a).waf(),
            _ => None,
        };
        let device_waf = waf_since(flash0);
        let device_waf_window = waf_since(recent_flash.front().copied().flatten());
        let disk = cache.disk_latency_totals();
        let [read_ms, write_ms] = [0, 1].map(|i| {
            let (n, ns) = (disk[i].0 - prev_disk[i].0, disk[i].1 - prev_disk[i].1);
            (n > 0).then(|| ns as f64 / n as f64 / 1e6)
        });
        if now > prev_t || live.get() == 0 {
            samples.push(Sample {
                t_s: (now - t0) as f64 / 1e9,
                hit_ratio: c.hit_ratio(),
                hit_ratio_window: if wg > 0 { wh as f64 / wg as f64 } else { 0.0 },
                gets_per_s: rate(c.gets, prev.gets),
                get_gib_s: rate(c.get_bytes, prev.get_bytes) / GIB,
                read_gib_s: rate(c.disk_read_bytes, prev.disk_read_bytes) / GIB,
                write_gib_s: rate(c.disk_write_bytes, prev.disk_write_bytes) / GIB,
                get_mean_ms: if wg > 0 {
                    wns as f64 / wg as f64 / 1e6
                } else {
                    0.0
                },
                disk_read_mean_ms: read_ms,
                disk_write_mean_ms: write_ms,
                free_zones: free,
                used_bytes: cache.valid_chunks() * geo.chunk_bytes,
                gc_relocations: c.gc_relocations,
                host_waf: c.host_waf(),
                device_waf,
                device_waf_window,
            });
        }
        if spec.audit {
            cache.audit().map_err(CacheError::Internal)?;
        }
        prev = c;
        prev_disk = disk;
        if recent_flash.len() == DEVICE_WAF_WINDOW_INTERVALS {
            recent_flash.pop_front();
        }
        recent_flash.push_back(flash);
        prev_t = now;
        progress(&Progress {
            virtual_ns: now - t0,
            done: c.gets,
            total,
            hit_ratio: c.hit_ratio(),
        });
        if let Some(e) = failure.borrow_mut().take() {
            cache.stop();
            return Err(e);
        }
        if let Some(f) = cache.failure() {
            return Err(CacheError::Internal(format!("eviction: {f}")));
        }
        if live.get() == 0 {
            break;
        }
        if c.gets != last_progress.0 {
            last_progress = (c.gets, now);
        } else if now - last_progress.1 > stall_ns {
            let space = cache.describe_space();
            cache.stop();
            return Err(CacheError::Stalled {
                since_ns: last_progress.1 - t0,
                now_ns: now - t0,
                space,
            });
        }
    }
    cache.stop();
    if spec.cache.verify {
        // Every chunk still cached must read back as stored.
        let c2 = cache.clone();
        rt.block_on(async move { c2.verify_all().await })?;
    }
    let end = last_done_ns.get();
    let duration_s = (end - t0) as f64 / 1e9;
    let c = cache.counters();
    let lat = cache.latencies();
    let occupancy = cache.write_occupancy(end);
    let per_s = |v: u64| {
        if duration_s > 0.0 {
            v as f64 / duration_s
        } else {
            0.0
        }
    };
    let flash = match (flash0, flash_counters_of(&open.dev)) {
        (Some(a), Some(b)) => Some(b.since(&a)),
        _ => None,
    };
    if spec.audit {
        cache.audit().map_err(CacheError::Internal)?;
    }
    Ok(RunReport {
        device: spec.device.name(),
        nsid: open.nsid,
        backend: geo.backend,
        policy: spec.cache.policy,
        geometry: geo,
        workers: spec.workers,
        remote_fetch_ms: remote_ns as f64 / 1e6,
        remote_fetch_std_ms: spec.remote.spread_ns(spec.cache.chunk_bytes) as f64 / 1e6,
        fetch_order: spec.cache.fetch_order,
        stagger_start: spec.stagger_start,
        workload: workload.origin.clone(),
        requests: c.gets,
        seed: spec.seed,
        duration_s,
        counters: c,
        hit_ratio: c.hit_ratio(),
        steady_hit_ratio: cache.steady_hit_ratio(),
        first_eviction_s: cache.first_eviction_ns().map(|t| (t - t0) as f64 / 1e9),
        get: lat.get.summary(),
        hit: lat.hit.summary(),
        miss: lat.miss.summary(),
        disk_read: lat.disk_read.summary(),
        disk_write: lat.disk_write.summary(),
        gets_per_s: per_s(c.gets),
        get_gib_s: per_s(c.get_bytes) / GIB,
        read_gib_s: per_s(c.disk_read_bytes) / GIB,
        write_gib_s: per_s(c.disk_write_bytes) / GIB,
        host_waf: c.host_waf(),
        device_waf: flash.and_then(|f| f.waf()),
        flash,
        min_free_zones: min_free,
        writes_in_flight_mean: occupancy.map(|o| o.0),
        write_idle_share: occupancy.map(|o| o.1),
        samples,
    })
}
