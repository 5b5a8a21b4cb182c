//! One ublk request decoded from its I/O descriptor: what the kernel asks of
//! the served device, in the device's LBAs. Pure (no system calls), so every
//! rule here is unit-tested without a kernel.

use libublk::sys;

/// The kernel's sector: every position and length in a ublk descriptor.
pub const SECTOR_BYTES: u64 = 512;

/// Bytes of one `struct blk_zone` in a zone report.
pub const BLK_ZONE_BYTES: usize = 64;

/// The fields of `struct ublksrv_io_desc` a request is decoded from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoDesc {
    /// Operation (low 8 bits) and `UBLK_IO_F_*` flags.
    pub op_flags: u32,
    /// Length in sectors; for a zone report, the number of zones.
    pub nr_sectors_or_zones: u32,
    pub start_sector: u64,
}

impl From<&sys::ublksrv_io_desc> for IoDesc {
    fn from(d: &sys::ublksrv_io_desc) -> IoDesc {
        IoDesc {
            op_flags: d.op_flags,
            nr_sectors_or_zones: d.nr_sectors,
            start_sector: d.start_sector,
        }
    }
}

/// A request in the device's terms (LBAs of `lba_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    Read {
        slba: u64,
        nlb: u64,
    },
    Write {
        slba: u64,
        nlb: u64,
        fua: bool,
    },
    Flush,
    /// Deallocate (conventional devices only).
    Discard {
        slba: u64,
        nlb: u64,
    },
    /// Write zeroes (conventional devices only; no payload).
    WriteZeroes {
        slba: u64,
        nlb: u64,
        fua: bool,
    },
    ZoneOpen {
        zslba: u64,
    },
    ZoneClose {
        zslba: u64,
    },
    ZoneFinish {
        zslba: u64,
    },
    ZoneReset {
        zslba: u64,
    },
    ZoneResetAll,
    ZoneAppend {
        zslba: u64,
        nlb: u64,
        fua: bool,
    },
    /// Describe up to `zones` zones from the one starting at `zslba`.
    ReportZones {
        zslba: u64,
        zones: u32,
    },
}

impl Request {
    /// Bytes the server reads from the kernel before running the request
    /// (the data of a write or an append).
    pub fn payload_in_bytes(&self, lba_bytes: u64) -> u64 {
        match *self {
            Request::Write { nlb, .. } | Request::ZoneAppend { nlb, .. } => nlb * lba_bytes,
            _ => 0,
        }
    }

    /// The LBAs of data the request moves or names (reads, writes,
    /// appends, write-zeroes, discards; 0 for the others).
    pub fn data_lbas(&self) -> u64 {
        match *self {
            Request::Read { nlb, .. }
            | Request::Write { nlb, .. }
            | Request::ZoneAppend { nlb, .. }
            | Request::WriteZeroes { nlb, .. }
            | Request::Discard { nlb, .. } => nlb,
            _ => 0,
        }
    }

    /// A short name for logs.
    pub fn name(&self) -> &'static str {
        match self {
            Request::Read { .. } => "read",
            Request::Write { .. } => "write",
            Request::Flush => "flush",
            Request::Discard { .. } => "discard",
            Request::WriteZeroes { .. } => "write-zeroes",
            Request::ZoneOpen { .. } => "zone-open",
            Request::ZoneClose { .. } => "zone-close",
            Request::ZoneFinish { .. } => "zone-finish",
            Request::ZoneReset { .. } => "zone-reset",
            Request::ZoneResetAll => "zone-reset-all",
            Request::ZoneAppend { .. } => "zone-append",
            Request::ReportZones { .. } => "report-zones",
        }
    }

    /// The first LBA the request names (0 when it names none), for logs.
    pub fn lba(&self) -> u64 {
        match *self {
            Request::Read { slba, .. }
            | Request::Write { slba, .. }
            | Request::Discard { slba, .. }
            | Request::WriteZeroes { slba, .. } => slba,
            Request::ZoneOpen { zslba }
            | Request::ZoneClose { zslba }
            | Request::ZoneFinish { zslba }
            | Request::ZoneReset { zslba }
            | Request::ZoneAppend { zslba, .. }
            | Request::ReportZones { zslba, .. } => zslba,
            Request::Flush | Request::ZoneResetAll => 0,
        }
    }
}

/// Why a descriptor could not be decoded: the request fails with
/// [`DecodeError::errno`] before it reaches the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    #[error("operation {0} is not supported")]
    UnsupportedOp(u32),
    #[error("sector {start_sector} + {sectors} is not whole {lba_bytes}-byte blocks")]
    Misaligned {
        start_sector: u64,
        sectors: u64,
        lba_bytes: u64,
    },
}

impl DecodeError {
    /// What the request completes with (a positive errno).
    pub fn errno(&self) -> i32 {
        match self {
            DecodeError::UnsupportedOp(_) => libc::EOPNOTSUPP,
            DecodeError::Misaligned { .. } => libc::EINVAL,
        }
    }
}

/// Decodes `iod` for a device of `lba_bytes` blocks (a power of two ≥ 512).
pub fn decode(iod: &IoDesc, lba_bytes: u64) -> Result<Request, DecodeError> {
    let op = iod.op_flags & 0xff;
    let fua = iod.op_flags & sys::UBLK_IO_F_FUA != 0;
    let sectors_per_lba = lba_bytes / SECTOR_BYTES;
    let lbas = |sectors: u64| -> Result<(u64, u64), DecodeError> {
        if iod.start_sector % sectors_per_lba != 0 || sectors % sectors_per_lba != 0 {
            return Err(DecodeError::Misaligned {
                start_sector: iod.start_sector,
                sectors,
                lba_bytes,
            });
        }
        Ok((
            iod.start_sector / sectors_per_lba,
            sectors / sectors_per_lba,
        ))
    };
    let sectors = u64::from(iod.nr_sectors_or_zones);
    let zslba = || lbas(0).map(|(slba, _)| slba);
    Ok(match op {
        sys::UBLK_IO_OP_READ => {
            let (slba, nlb) = lbas(sectors)?;
            Request::Read { slba, nlb }
        }
        sys::UBLK_IO_OP_WRITE => {
            let (slba, nlb) = lbas(sectors)?;
            Request::Write { slba, nlb, fua }
        }
        sys::UBLK_IO_OP_FLUSH => Request::Flush,
        sys::UBLK_IO_OP_DISCARD => {
            let (slba, nlb) = lbas(sectors)?;
            Request::Discard { slba, nlb }
        }
        sys::UBLK_IO_OP_WRITE_ZEROES => {
            let (slba, nlb) = lbas(sectors)?;
            Request::WriteZeroes { slba, nlb, fua }
        }
        sys::UBLK_IO_OP_ZONE_OPEN => Request::ZoneOpen { zslba: zslba()? },
        sys::UBLK_IO_OP_ZONE_CLOSE => Request::ZoneClose { zslba: zslba()? },
        sys::UBLK_IO_OP_ZONE_FINISH => Request::ZoneFinish { zslba: zslba()? },
        sys::UBLK_IO_OP_ZONE_RESET => Request::ZoneReset { zslba: zslba()? },
        sys::UBLK_IO_OP_ZONE_RESET_ALL => Request::ZoneResetAll,
        sys::UBLK_IO_OP_ZONE_APPEND => {
            let (zslba, nlb) = lbas(sectors)?;
            Request::ZoneAppend { zslba, nlb, fua }
        }
        sys::UBLK_IO_OP_REPORT_ZONES => Request::ReportZones {
            zslba: zslba()?,
            zones: iod.nr_sectors_or_zones,
        },
        other => return Err(DecodeError::UnsupportedOp(other)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iod(op: u32, sectors: u32, start_sector: u64) -> IoDesc {
        IoDesc {
            op_flags: op,
            nr_sectors_or_zones: sectors,
            start_sector,
        }
    }

    #[test]
    fn reads_and_writes_are_in_device_blocks() {
        assert_eq!(
            decode(&iod(sys::UBLK_IO_OP_READ, 16, 80), 4096),
            Ok(Request::Read { slba: 10, nlb: 2 })
        );
        assert_eq!(
            decode(&iod(sys::UBLK_IO_OP_WRITE | sys::UBLK_IO_F_FUA, 8, 8), 4096),
            Ok(Request::Write {
                slba: 1,
                nlb: 1,
                fua: true
            })
        );
        assert_eq!(
            decode(&iod(sys::UBLK_IO_OP_WRITE, 3, 5), 512),
            Ok(Request::Write {
                slba: 5,
                nlb: 3,
                fua: false
            })
        );
    }

    #[test]
    fn a_request_that_is_not_whole_blocks_is_einval() {
        for d in [
            iod(sys::UBLK_IO_OP_READ, 4, 0),
            iod(sys::UBLK_IO_OP_WRITE, 8, 4),
        ] {
            let e = decode(&d, 4096).unwrap_err();
            assert!(matches!(e, DecodeError::Misaligned { .. }), "{e}");
            assert_eq!(e.errno(), libc::EINVAL);
        }
    }

    #[test]
    fn zone_operations_name_the_zone_start() {
        let zone_sectors = 8 * 2048;
        assert_eq!(
            decode(&iod(sys::UBLK_IO_OP_ZONE_RESET, 0, 3 * zone_sectors), 4096),
            Ok(Request::ZoneReset { zslba: 3 * 2048 })
        );
        assert_eq!(
            decode(&iod(sys::UBLK_IO_OP_ZONE_RESET_ALL, 0, 0), 4096),
            Ok(Request::ZoneResetAll)
        );
        assert_eq!(
            decode(
                &iod(
                    sys::UBLK_IO_OP_ZONE_APPEND | sys::UBLK_IO_F_FUA,
                    16,
                    zone_sectors
                ),
                4096
            ),
            Ok(Request::ZoneAppend {
                zslba: 2048,
                nlb: 2,
                fua: true
            })
        );
        // a report's count is zones, not sectors
        assert_eq!(
            decode(&iod(sys::UBLK_IO_OP_REPORT_ZONES, 5, zone_sectors), 4096),
            Ok(Request::ReportZones {
                zslba: 2048,
                zones: 5
            })
        );
    }

    #[test]
    fn unknown_operations_are_eopnotsupp() {
        let e = decode(&iod(sys::UBLK_IO_OP_WRITE_SAME, 8, 0), 4096).unwrap_err();
        assert_eq!(e, DecodeError::UnsupportedOp(sys::UBLK_IO_OP_WRITE_SAME));
        assert_eq!(e.errno(), libc::EOPNOTSUPP);
        assert!(decode(&iod(77, 8, 0), 4096).is_err());
    }

    #[test]
    fn payloads_are_the_data_of_writes_and_appends_only() {
        let w = Request::Write {
            slba: 0,
            nlb: 3,
            fua: false,
        };
        assert_eq!(w.payload_in_bytes(4096), 3 * 4096);
        assert_eq!(Request::Read { slba: 0, nlb: 3 }.payload_in_bytes(4096), 0);
        assert_eq!(
            Request::WriteZeroes {
                slba: 0,
                nlb: 3,
                fua: false
            }
            .payload_in_bytes(4096),
            0
        );
    }
}
