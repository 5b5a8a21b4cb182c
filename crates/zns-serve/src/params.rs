//! What the kernel is told about a served device (`struct ublk_params`),
//! derived from the device's own geometry, and the limits Linux puts on it:
//! checked here so that a device Linux would refuse gets a clear error
//! before anything is set up.

use libublk::sys;
use serde::Serialize;

use crate::request::SECTOR_BYTES;
use zns_target::Target;

/// A served device's geometry as the kernel sees it (plain numbers, so it
/// can leave the runtime's thread; printed by `zns serve --json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Geometry {
    pub lba_bytes: u64,
    pub capacity_bytes: u64,
    /// Largest request the kernel sends (the device's MDTS, capped by the
    /// server's buffer).
    pub max_io_bytes: u64,
    /// `None` for a conventional device.
    pub zoned: Option<ZonedGeometry>,
}

/// The zoned part of [`Geometry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ZonedGeometry {
    pub zone_bytes: u64,
    pub zone_capacity_bytes: u64,
    pub zones: u64,
    /// 0 = no limit.
    pub max_open_zones: u32,
    /// 0 = no limit.
    pub max_active_zones: u32,
    pub max_append_bytes: u64,
}

/// Why a device cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GeometryError {
    #[error("logical block size {0} B: ublk serves 512 B to 4 KiB blocks (a power of two)")]
    BlockSize(u64),
    #[error(
        "zone size {0} B is not a power of two: Linux's zoned block devices need one \
         (its NVMe driver refuses such namespaces too); choose a profile or --set \
         namespace.N.zone_size_lbas with a power-of-two zone size"
    )]
    ZoneSizeNotPowerOfTwo(u64),
    #[error("the device has no zones")]
    NoZones,
}

/// The geometry of `dev` for a server whose request buffers hold
/// `io_buf_bytes`.
pub fn geometry(dev: &Target, io_buf_bytes: u32) -> Result<Geometry, GeometryError> {
    let g = dev.geometry();
    let lba_bytes = g.lba_bytes;
    if !lba_bytes.is_power_of_two() || !(512..=4096).contains(&lba_bytes) {
        return Err(GeometryError::BlockSize(lba_bytes));
    }
    let max_io_bytes = g
        .max_transfer_bytes
        .max(lba_bytes)
        .min(u64::from(io_buf_bytes) / lba_bytes * lba_bytes);
    let zoned = match dev {
        Target::Block(_) => None,
        Target::Zoned(z) => {
            let c = z.config();
            let zones = u64::from(c.zone_count);
            if zones == 0 {
                return Err(GeometryError::NoZones);
            }
            let zone_bytes = c.zone_size_lbas * lba_bytes;
            if !zone_bytes.is_power_of_two() {
                return Err(GeometryError::ZoneSizeNotPowerOfTwo(zone_bytes));
            }
            // ublk refuses a limit above the zone count; such a limit can
            // never bind, so it is the same as none
            let limit = |l: u32| if u64::from(l) >= zones { 0 } else { l };
            Some(ZonedGeometry {
                zone_bytes,
                zone_capacity_bytes: c.zone_capacity_lbas * lba_bytes,
                zones,
                max_open_zones: limit(c.max_open_zones),
                max_active_zones: limit(c.max_active_zones),
                max_append_bytes: (u64::from(c.append_limit_lbas()) * lba_bytes)
                    .min(max_io_bytes)
                    .max(lba_bytes),
            })
        }
    };
    Ok(Geometry {
        lba_bytes,
        capacity_bytes: g.capacity_bytes,
        max_io_bytes,
        zoned,
    })
}

/// The `ublk_params` for `g`: basic (sizes, volatile cache with FUA), zoned
/// (limits, append size) or, for a conventional device, discard.
pub fn ublk_params(g: &Geometry) -> sys::ublk_params {
    let shift = |bytes: u64| bytes.trailing_zeros() as u8;
    let sectors = |bytes: u64| bytes / SECTOR_BYTES;
    let mut p = sys::ublk_params {
        types: sys::UBLK_PARAM_TYPE_BASIC,
        basic: sys::ublk_param_basic {
            attrs: sys::UBLK_ATTR_VOLATILE_CACHE | sys::UBLK_ATTR_FUA,
            logical_bs_shift: shift(g.lba_bytes),
            physical_bs_shift: shift(g.lba_bytes),
            io_opt_shift: shift(g.lba_bytes),
            io_min_shift: shift(g.lba_bytes),
            max_sectors: sectors(g.max_io_bytes) as u32,
            dev_sectors: sectors(g.capacity_bytes),
            ..Default::default()
        },
        ..Default::default()
    };
    match &g.zoned {
        Some(z) => {
            p.types |= sys::UBLK_PARAM_TYPE_ZONED;
            p.basic.chunk_sectors = sectors(z.zone_bytes) as u32;
            p.zoned = sys::ublk_param_zoned {
                max_open_zones: z.max_open_zones,
                max_active_zones: z.max_active_zones,
                max_zone_append_sectors: sectors(z.max_append_bytes) as u32,
                ..Default::default()
            };
        }
        None => {
            p.types |= sys::UBLK_PARAM_TYPE_DISCARD;
            p.discard = sys::ublk_param_discard {
                discard_granularity: g.lba_bytes as u32,
                max_discard_sectors: u32::MAX >> 9,
                max_write_zeroes_sectors: sectors(g.max_io_bytes) as u32,
                max_discard_segments: 1,
                ..Default::default()
            };
        }
    }
    p
}
