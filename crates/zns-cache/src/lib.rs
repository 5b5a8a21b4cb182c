//! zns-cache owns ZNCache: a ZNS-aware flash chunk cache in front of a
//! (modelled) remote store, running over either a zoned device (ZNS
//! backend: zones written sequentially, reset on eviction) or a block device
//! (block backend: the namespace split into zone-sized regions, freed chunk
//! slots reused in place, GC left to the device). It has the cache map with
//! in-flight fetch dedup, the zone state manager, the ZPLRU and CLRU
//! eviction policies (CLRU with working host GC on ZNS), the background
//! eviction task with watermarks and foreground eviction, the remote-store
//! latency model of the paper's appendix A, YCSB Zipfian and uniform
//! workload generators with ZNCache's binary workload files and text
//! traces, the metrics (hit ratio, latency percentiles, throughput, host and
//! device WAF, free zones; CSV time series, PNG plots). The paper's
//! experiments live a floor above, in zns-repro (`zncache`). The device itself (a profile's namespace or a RAID
//! array) is named and opened by zns-target; the cache wraps it in its
//! backend. A run's parameters, as every front end takes them, are
//! `params::CacheRunParams` (flags, sweep keys, Python arguments).
//! Everything runs on the zns-sim runtime in virtual time; see
//! docs/zncache.md.

pub mod backend;
pub mod cache;
pub mod error;
mod keymap;
mod lru;
pub mod metrics;
pub mod params;
pub mod plot;
pub mod remote;
pub mod report;
pub mod run;
pub mod units;
pub mod workload;

pub use backend::{BackendKind, BlockBackend, ChunkDevice, ZnsBackend, ZnsWrite, ZoneLayout};
pub use cache::{Cache, CacheConfig, FetchOrder, Geometry, GetKind, Policy};
pub use error::CacheError;
pub use metrics::{Counters, FlashCounters, LatencySummary, Sample};
pub use params::{CacheDeviceParams, CacheRunParams};
pub use remote::RemoteLatency;
pub use run::{
    precondition_order, run_cache, DeviceSpec, Precondition, Progress, RunReport, RunSpec,
    WorkloadSpec,
};
pub use workload::{Distribution, Workload, Zipfian};
