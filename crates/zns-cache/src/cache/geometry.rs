//! The layout a cache derives from its [`CacheConfig`] and the device
//! ([`Geometry`]): how space is managed ([`SpaceMode`]), how many chunks its
//! zones hold ([`ChunkSlots`]), the command size and depth, the active-zone
//! limit and the watermarks, each checked against the device.

use serde::Serialize;
use zns_target::check_whole_blocks;

use super::config::{CacheConfig, Policy};
use crate::backend::{BackendKind, ZoneLayout};
use crate::error::CacheError;

/// How space is managed (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpaceMode {
    Log,
    Slots,
}

/// The layout the cache derived from its config and the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Geometry {
    pub backend: BackendKind,
    pub mode: SpaceMode,
    pub zones: u32,
    pub chunks_per_zone: u32,
    pub total_chunks: u64,
    pub chunk_bytes: u64,
    pub lba_bytes: u32,
    pub chunk_lbas: u64,
    pub zone_stride_lbas: u64,
    pub zone_capacity_lbas: u64,
    pub io_lbas: u64,
    pub io_depth: u32,
    pub max_active: u32,
    pub reserve_zones: u32,
    pub chunk_high: u64,
    pub chunk_low: u64,
    /// Zones whose capacity is not a whole number of chunks are finished.
    pub finish_full_zones: bool,
}

/// How many chunks a cache's zones hold ([`Geometry::chunk_slots`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkSlots {
    pub zones: u32,
    pub chunks_per_zone: u64,
    pub total_chunks: u64,
}

impl Geometry {
    /// The cache's zones and chunk slots on `layout`: `cfg`'s chunk and
    /// zone count checked against the device, not its watermarks or
    /// backend (what a workload file sized to a cache needs).
    pub fn chunk_slots(cfg: &CacheConfig, layout: &ZoneLayout) -> Result<ChunkSlots, CacheError> {
        let p = |m: String| Err(CacheError::Param(m));
        let lba = u64::from(layout.lba_bytes);
        check_whole_blocks("chunk", cfg.chunk_bytes, lba)
            .map_err(|e| CacheError::Param(e.to_string()))?;
        let zone_cap_bytes = layout.zone_capacity_lbas * lba;
        if cfg.chunk_bytes > zone_cap_bytes {
            return p(format!(
                "chunk size {} is larger than a zone's capacity ({}): a chunk must fit in one zone",
                crate::units::fmt_bytes(cfg.chunk_bytes),
                crate::units::fmt_bytes(zone_cap_bytes)
            ));
        }
        let zones = match cfg.zones {
            Some(0) => return p("--zones 0: the cache needs zones".into()),
            Some(z) if z > layout.zone_count => {
                return p(format!(
                    "--zones {z}: the device has {} zones (regions) of {}",
                    layout.zone_count,
                    crate::units::fmt_bytes(zone_cap_bytes)
                ))
            }
            Some(z) => z,
            None => layout.zone_count,
        };
        if zones == 0 {
            return p("the device holds no whole zone (region)".into());
        }
        let chunk_lbas = cfg.chunk_bytes / lba;
        let chunks_per_zone = layout.zone_capacity_lbas / chunk_lbas;
        if chunks_per_zone > u64::from(u32::MAX) {
            return p("too many chunks per zone".into());
        }
        let total_chunks = chunks_per_zone * u64::from(zones);
        if total_chunks >= u64::from(u32::MAX) {
            return p(format!(
                "{total_chunks} chunk slots: more than the cache indexes (2^32 − 1)"
            ));
        }
        Ok(ChunkSlots {
            zones,
            chunks_per_zone,
            total_chunks,
        })
    }

    /// Checks `cfg` against the device layout.
    pub fn derive(
        cfg: &CacheConfig,
        layout: &ZoneLayout,
        backend: BackendKind,
    ) -> Result<Geometry, CacheError> {
        let p = |m: String| Err(CacheError::Param(m));
        let lba = u64::from(layout.lba_bytes);
        let ChunkSlots {
            zones,
            chunks_per_zone,
            total_chunks,
        } = Geometry::chunk_slots(cfg, layout)?;
        let chunk_lbas = cfg.chunk_bytes / lba;
        if cfg.zone_low <= cfg.zone_high {
            return p(format!(
                "zone watermarks: low (target, {}) must be above high (trigger, {})",
                cfg.zone_low, cfg.zone_high
            ));
        }
        let mode = match (backend, cfg.policy) {
            (BackendKind::Block, Policy::Clru) => SpaceMode::Slots,
            _ => SpaceMode::Log,
        };
        let reserve_zones = u32::from(mode == SpaceMode::Log && cfg.policy == Policy::Clru);
        if mode == SpaceMode::Log && cfg.zone_high < reserve_zones {
            return p("CLRU with host GC needs zone_high ≥ 1 (one zone stays free for GC)".into());
        }
        if mode == SpaceMode::Log && zones < cfg.zone_low + reserve_zones + 1 {
            return p(format!(
                "{zones} zones are too few for the watermarks: need more than low ({}){} to hold data",
                cfg.zone_low,
                if reserve_zones > 0 { " + 1 GC zone" } else { "" }
            ));
        }
        let mtl = u64::from(layout.max_transfer_lbas.max(1));
        if let Some(b) = cfg.io_bytes {
            check_whole_blocks("io size", b, lba).map_err(|e| CacheError::Param(e.to_string()))?;
        }
        let io_lbas = match cfg.io_bytes {
            None => mtl,
            Some(b) if b / lba > mtl => {
                return p(format!(
                    "io size {} is above the device's largest transfer ({})",
                    crate::units::fmt_bytes(b),
                    crate::units::fmt_bytes(mtl * lba)
                ))
            }
            Some(b) => b / lba,
        }
        .min(chunk_lbas);
        if cfg.io_depth == 0 {
            return p("io depth 0: at least one command per chunk must be in flight".into());
        }
        let device_active = if layout.max_active_zones == 0 {
            14
        } else {
            layout.max_active_zones
        };
        let limit = if backend == BackendKind::Zns {
            device_active.saturating_sub(reserve_zones)
        } else {
            u32::MAX
        };
        let wanted = cfg.max_active_zones.unwrap_or(device_active.min(limit));
        if wanted == 0 {
            return p("max active zones 0: inserts need a zone".into());
        }
        if limit == 0 {
            return p(
                "the device allows too few active zones for CLRU's GC zone plus an insert zone"
                    .into(),
            );
        }
        if backend == BackendKind::Zns && wanted > limit {
            return p(format!(
                "max active zones {wanted}: the device allows {device_active}{}",
                if reserve_zones > 0 {
                    " (one is CLRU's GC zone)"
                } else {
                    ""
                }
            ));
        }
        let cpz = chunks_per_zone;
        let default_high = (u64::from(cfg.zone_low) + 1) * cpz;
        let chunk_high = cfg.chunk_high.unwrap_or(default_high);
        let chunk_low = cfg.chunk_low.unwrap_or(chunk_high + (cpz / 2).max(1));
        if cfg.policy == Policy::Clru {
            if chunk_low <= chunk_high {
                return p(format!(
                    "chunk watermarks: low (target, {chunk_low}) must be above high (trigger, {chunk_high})"
                ));
            }
            if chunk_low >= total_chunks {
                return p(format!(
                    "chunk watermarks: keeping {chunk_low} of {total_chunks} chunk slots free leaves no room for data (use more zones or lower --chunk-low)"
                ));
            }
        }
        Ok(Geometry {
            backend,
            mode,
            zones,
            chunks_per_zone: cpz as u32,
            total_chunks,
            chunk_bytes: cfg.chunk_bytes,
            lba_bytes: layout.lba_bytes,
            chunk_lbas,
            zone_stride_lbas: layout.zone_stride_lbas,
            zone_capacity_lbas: layout.zone_capacity_lbas,
            io_lbas,
            io_depth: cfg.io_depth,
            max_active: wanted.min(limit),
            reserve_zones,
            chunk_high,
            chunk_low,
            finish_full_zones: backend == BackendKind::Zns
                && cpz * chunk_lbas < layout.zone_capacity_lbas,
        })
    }

    pub fn cache_bytes(&self) -> u64 {
        self.total_chunks * self.chunk_bytes
    }
    pub(crate) fn zone_slba(&self, z: u32) -> u64 {
        u64::from(z) * self.zone_stride_lbas
    }
    pub(crate) fn slot_slba(&self, g: u32) -> u64 {
        let cpz = self.chunks_per_zone;
        self.zone_slba(g / cpz) + u64::from(g % cpz) * self.chunk_lbas
    }
}
