//! libzbd's zone information dump format, so that Debian's unmodified `zbd`
//! tool (`zbd report FILE`) can show the zones of any `ZonedDevice` — an
//! emulated device image included — on a machine without zoned block
//! support. This module owns the byte layout and nothing else; it is plain
//! data and runs on every platform.
//!
//! Layout (libzbd 2.0.4, facts from `tools/cli/zbd.h`, `tools/cli/zbd_dump.c`
//! and `include/libzbd/zbd.h`; all integers native-endian as libzbd writes
//! them with `write(2)` of packed structs, i.e. little-endian on x86-64):
//!
//! - a 192-byte header `struct zbd_dump`: the 128-byte `struct zbd_info`, then
//!   `zstart` and `zend` (u32, the dumped zone range, `zend` exclusive), then
//!   56 reserved bytes;
//! - then one 64-byte `struct zbd_zone` for *every* zone of the device, zone 0
//!   first (`zbd report` seeks to `192 + zone_index × 64` whatever
//!   `zstart`/`zend` say).
//!
//! All positions and lengths in the zone entries are bytes. `zbd dump` names
//! the file `<prefix>_zone_info.dump`; `zbd report` accepts any regular file.

use zns_core::{ZoneDescriptor, ZoneState, ZonedConfig};

/// Size of `struct zbd_info`.
pub const ZBD_INFO_BYTES: usize = 128;
/// Size of the dump header `struct zbd_dump`.
pub const ZBD_DUMP_HEADER_BYTES: usize = 192;
/// Size of one `struct zbd_zone`.
pub const ZBD_ZONE_BYTES: usize = 64;

/// `enum zbd_dev_model`: ZBD_DM_HOST_MANAGED.
pub const ZBD_DM_HOST_MANAGED: u32 = 1;
/// `enum zbd_zone_type`: ZBD_ZONE_TYPE_SWR (= BLK_ZONE_TYPE_SEQWRITE_REQ).
pub const ZBD_ZONE_TYPE_SWR: u32 = 2;

/// Why a dump could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DumpError {
    #[error("the zone report has {got} zones, the device {expected}")]
    ZoneCount { expected: u32, got: usize },
    #[error("zone {index} starts at LBA {start_lba}, expected {expected_lba} (zones must be uniform and contiguous)")]
    ZoneOrder {
        index: usize,
        start_lba: u64,
        expected_lba: u64,
    },
    #[error("vendor id {0:?} is longer than 31 bytes")]
    VendorId(String),
}

/// The `zbd_zone_cond` value of a zone state (the same numbers as Linux's
/// `BLK_ZONE_COND_*` and the NVMe zone state nibble).
pub fn zone_cond(state: ZoneState) -> u32 {
    u32::from(state.code())
}

/// The write pointer libzbd shows for a zone, in bytes: like the Linux NVMe
/// driver, a full zone reports `start + zone size`; other zones their WP.
fn zone_wp_bytes(cfg: &ZonedConfig, z: &ZoneDescriptor) -> u64 {
    let lba = u64::from(cfg.lba_bytes);
    match z.state {
        ZoneState::Full => (z.start_lba + cfg.zone_size_lbas) * lba,
        _ => z.write_pointer * lba,
    }
}

/// The whole dump file for a device with configuration `cfg` whose zones
/// are `zones` (a full report, zone 0 first). `vendor_id` fills
/// `zbd_info.vendor_id` (at most 31 bytes, NUL terminated).
pub fn dump_bytes(
    cfg: &ZonedConfig,
    zones: &[ZoneDescriptor],
    vendor_id: &str,
) -> Result<Vec<u8>, DumpError> {
    if zones.len() != cfg.zone_count as usize {
        return Err(DumpError::ZoneCount {
            expected: cfg.zone_count,
            got: zones.len(),
        });
    }
    for (i, z) in zones.iter().enumerate() {
        let expected_lba = i as u64 * cfg.zone_size_lbas;
        if z.start_lba != expected_lba {
            return Err(DumpError::ZoneOrder {
                index: i,
                start_lba: z.start_lba,
                expected_lba,
            });
        }
    }
    if vendor_id.len() > 31 {
        return Err(DumpError::VendorId(vendor_id.to_string()));
    }
    let lba = u64::from(cfg.lba_bytes);
    let capacity_bytes = cfg.total_lbas() * lba;
    let zone_bytes = cfg.zone_size_lbas * lba;
    let mut out = Vec::with_capacity(ZBD_DUMP_HEADER_BYTES + zones.len() * ZBD_ZONE_BYTES);

    // struct zbd_info (packed, 128 bytes)
    let mut vendor = [0u8; 32];
    vendor[..vendor_id.len()].copy_from_slice(vendor_id.as_bytes());
    out.extend_from_slice(&vendor);
    out.extend_from_slice(&(capacity_bytes / 512).to_le_bytes()); // nr_sectors
    out.extend_from_slice(&cfg.total_lbas().to_le_bytes()); // nr_lblocks
    out.extend_from_slice(&cfg.total_lbas().to_le_bytes()); // nr_pblocks (pblock = lblock)
    out.extend_from_slice(&zone_bytes.to_le_bytes()); // zone_size
    out.extend_from_slice(&((zone_bytes / 512) as u32).to_le_bytes()); // zone_sectors
    out.extend_from_slice(&cfg.lba_bytes.to_le_bytes()); // lblock_size
    out.extend_from_slice(&cfg.lba_bytes.to_le_bytes()); // pblock_size
    out.extend_from_slice(&cfg.zone_count.to_le_bytes()); // nr_zones
    out.extend_from_slice(&cfg.max_open_zones.to_le_bytes()); // max_nr_open_zones (0 = none)
    out.extend_from_slice(&cfg.max_active_zones.to_le_bytes()); // max_nr_active_zones
    out.extend_from_slice(&ZBD_DM_HOST_MANAGED.to_le_bytes()); // model
    out.resize(ZBD_INFO_BYTES, 0); // reserved[36]

    // zstart, zend (every zone), reserved[56]
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&cfg.zone_count.to_le_bytes());
    out.resize(ZBD_DUMP_HEADER_BYTES, 0);

    for z in zones {
        let at = out.len();
        out.extend_from_slice(&(z.start_lba * lba).to_le_bytes()); // start
        out.extend_from_slice(&zone_bytes.to_le_bytes()); // len
        out.extend_from_slice(&(z.capacity_lbas * lba).to_le_bytes()); // capacity
        out.extend_from_slice(&zone_wp_bytes(cfg, z).to_le_bytes()); // wp
        out.extend_from_slice(&0u32.to_le_bytes()); // flags
        out.extend_from_slice(&ZBD_ZONE_TYPE_SWR.to_le_bytes()); // type
        out.extend_from_slice(&zone_cond(z.state).to_le_bytes()); // cond
        out.resize(at + ZBD_ZONE_BYTES, 0); // reserved[20]
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zns_core::{ZoneAttributes, ZoneType};

    fn cfg() -> ZonedConfig {
        ZonedConfig {
            lba_bytes: 4096,
            zone_count: 3,
            zone_size_lbas: 256,
            zone_capacity_lbas: 200,
            max_open_zones: 2,
            max_active_zones: 3,
            max_transfer_lbas: 32,
            zone_append_limit_lbas: 0,
            auto_close_implicit: true,
            read_across_zone_boundary: false,
            zrwa: None,
        }
    }

    fn zone(i: u64, state: ZoneState, wp_off: u64) -> ZoneDescriptor {
        ZoneDescriptor {
            zone_type: ZoneType::SequentialWriteRequired,
            state,
            attributes: ZoneAttributes::default(),
            start_lba: i * 256,
            capacity_lbas: 200,
            write_pointer: i * 256 + wp_off,
        }
    }

    fn u64_at(b: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
    }
    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn header_and_zones_follow_libzbd_offsets() {
        let zones = [
            zone(0, ZoneState::Empty, 0),
            zone(1, ZoneState::ImplicitlyOpened, 7),
            zone(2, ZoneState::Full, 200),
        ];
        let b = dump_bytes(&cfg(), &zones, "znskit").unwrap();
        assert_eq!(b.len(), 192 + 3 * 64);
        assert_eq!(&b[..7], b"znskit\0");
        assert_eq!(u64_at(&b, 32), 3 * 256 * 4096 / 512); // nr_sectors
        assert_eq!(u64_at(&b, 40), 768); // nr_lblocks
        assert_eq!(u64_at(&b, 56), 256 * 4096); // zone_size
        assert_eq!(u32_at(&b, 64), 2048); // zone_sectors
        assert_eq!(u32_at(&b, 68), 4096); // lblock_size
        assert_eq!(u32_at(&b, 76), 3); // nr_zones
        assert_eq!(u32_at(&b, 80), 2); // max open
        assert_eq!(u32_at(&b, 84), 3); // max active
        assert_eq!(u32_at(&b, 88), ZBD_DM_HOST_MANAGED);
        assert_eq!((u32_at(&b, 128), u32_at(&b, 132)), (0, 3)); // zstart, zend
        let z1 = 192 + 64;
        assert_eq!(u64_at(&b, z1), 256 * 4096);
        assert_eq!(u64_at(&b, z1 + 8), 256 * 4096);
        assert_eq!(u64_at(&b, z1 + 16), 200 * 4096);
        assert_eq!(u64_at(&b, z1 + 24), (256 + 7) * 4096);
        assert_eq!(u32_at(&b, z1 + 36), 2); // SWR
        assert_eq!(u32_at(&b, z1 + 40), 0x2); // IMP_OPEN
        let z2 = 192 + 128;
        assert_eq!(u64_at(&b, z2 + 24), 3 * 256 * 4096); // full: start + len
        assert_eq!(u32_at(&b, z2 + 40), 0xE);
    }

    #[test]
    fn bad_reports_are_errors() {
        let c = cfg();
        assert_eq!(
            dump_bytes(&c, &[zone(0, ZoneState::Empty, 0)], "x"),
            Err(DumpError::ZoneCount {
                expected: 3,
                got: 1
            })
        );
        let swapped = [
            zone(0, ZoneState::Empty, 0),
            zone(2, ZoneState::Empty, 0),
            zone(1, ZoneState::Empty, 0),
        ];
        assert!(matches!(
            dump_bytes(&c, &swapped, "x"),
            Err(DumpError::ZoneOrder { index: 1, .. })
        ));
        let zones = [
            zone(0, ZoneState::Empty, 0),
            zone(1, ZoneState::Empty, 0),
            zone(2, ZoneState::Empty, 0),
        ];
        assert!(dump_bytes(&c, &zones, &"v".repeat(32)).is_err());
    }
}
