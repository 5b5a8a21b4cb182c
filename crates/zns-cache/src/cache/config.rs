//! A cache's parameters, device-independent: [`CacheConfig`], with the
//! eviction [`Policy`] and the [`FetchOrder`] of a miss (the defaults are
//! ZNCache's).

use serde::Serialize;

use crate::error::CacheError;

/// Eviction policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Zone-granular promotional LRU (no host GC).
    Zplru,
    /// Chunk-granular LRU (host GC on ZNS; slot reuse on block).
    Clru,
}

impl Policy {
    pub fn parse(s: &str) -> Result<Policy, CacheError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "zplru" | "zone" | "promote-zone" => Ok(Policy::Zplru),
            "clru" | "chunk" => Ok(Policy::Clru),
            other => Err(CacheError::Param(format!(
                "policy `{other}`: expected zplru or clru"
            ))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Policy::Zplru => "zplru",
            Policy::Clru => "clru",
        }
    }
}

/// When a miss fetches from the remote store relative to taking cache space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FetchOrder {
    /// ZNCache's order (`zn_cache_get`: `zsm_get_active_zone`, then the
    /// remote sleep inside `zn_gen_write_buffer`, then `pwrite`): the writer
    /// takes an active zone (or a free slot) and holds it across the fetch,
    /// so no more than `max_active` misses are in flight; as ZNCache, a new
    /// zone is opened whenever one is free and fewer than `max_active` are.
    /// This is what bounds the paper's 64 KiB runs at 14 × 64 KiB / 40.6 ms
    /// ≈ 0.021 GiB/s of disk writes (its Table 10) whatever the device.
    HoldZone,
    /// Fetch first, then take space and write: every worker's miss fetches
    /// at once (a cache that does not serialise fetches behind zones).
    FetchFirst,
}

impl FetchOrder {
    pub fn parse(s: &str) -> Result<FetchOrder, CacheError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "hold-zone" | "zncache" => Ok(FetchOrder::HoldZone),
            "fetch-first" => Ok(FetchOrder::FetchFirst),
            other => Err(CacheError::Param(format!(
                "unknown fetch order '{other}' (expected hold-zone or fetch-first)"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FetchOrder::HoldZone => "hold-zone",
            FetchOrder::FetchFirst => "fetch-first",
        }
    }
}

/// Cache parameters (device-independent).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CacheConfig {
    pub policy: Policy,
    pub chunk_bytes: u64,
    /// Zones (regions) the cache uses, from the first; `None` = all.
    pub zones: Option<u32>,
    /// Free-zone watermarks: evict / collect when free zones ≤ `zone_high`,
    /// until `zone_low` are free (ZNCache's EVICT_HIGH/LOW_THRESH_ZONES).
    pub zone_high: u32,
    pub zone_low: u32,
    /// CLRU free-chunk watermarks (trigger, target); `None` = derived:
    /// high = (zone_low + 1) zones of chunks, low = high + half a zone.
    pub chunk_high: Option<u64>,
    pub chunk_low: Option<u64>,
    /// Zones written at once by inserts (`None` = the device's active-zone
    /// limit, or 14 on a device without one, as ZNCache).
    pub max_active_zones: Option<u32>,
    /// Whether a miss holds its zone (slot) across the remote fetch.
    pub fetch_order: FetchOrder,
    /// Background eviction poll interval (ZNCache: 100 ms).
    pub eviction_interval_ns: u64,
    /// Bytes per device command (`None` = the device's MDTS).
    pub io_bytes: Option<u64>,
    /// Commands of one chunk in flight.
    pub io_depth: u32,
    /// Fill chunks with key-derived bytes and check every read.
    pub verify: bool,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            policy: Policy::Zplru,
            chunk_bytes: 64 << 10,
            zones: None,
            zone_high: 2,
            zone_low: 4,
            chunk_high: None,
            chunk_low: None,
            max_active_zones: None,
            fetch_order: FetchOrder::HoldZone,
            eviction_interval_ns: 100_000_000,
            io_bytes: None,
            io_depth: 8,
            verify: false,
        }
    }
}
