//! The kernel ABI this crate speaks, in one place: ioctl request numbers,
//! the structs they take, and the NVMe opcodes and field offsets used through
//! passthrough. Everything here is a fact copied by value from a header, named
//! after it, with its provenance; no logic beyond the `_IOC` encoding.
//!
//! Provenance:
//! - `include/uapi/linux/blkzoned.h` (Linux 6.1): `struct blk_zone`,
//!   `struct blk_zone_report`, `struct blk_zone_range`, `BLK*ZONE` ioctls,
//!   `BLK_ZONE_COND_*`, `BLK_ZONE_REP_CAPACITY`. Sectors are 512 bytes.
//! - `include/uapi/linux/fs.h`: `BLKGETSIZE64`, `BLKSSZGET`, `BLKPBSZGET`.
//! - `include/uapi/linux/nvme_ioctl.h`: `struct nvme_passthru_cmd`,
//!   `struct nvme_passthru_cmd64`, `NVME_IOCTL_ID`, `NVME_IOCTL_ADMIN_CMD`,
//!   `NVME_IOCTL_IO64_CMD`. A passthrough ioctl returns 0, a negative errno,
//!   or the positive NVMe completion status (status field >> 1: SC in bits
//!   7:0, SCT in bits 10:8, CRD 12:11, More 13, DNR 14).
//! - `include/asm-generic/ioctl.h`: the `_IOC` encoding (x86-64, arm64).
//! - NVMe ZNS command set 1.1: Zone Append 7Dh, Zone Management Send 79h
//!   (CDW13: ZSA bits 7:0, Select All bit 8, ZRWAA bit 9), Zone Management
//!   Receive 7Ah; Identify (admin 06h) CNS 05h with CSI 02h in CDW11 31:24
//!   returns the ZNS Identify Namespace data (layout cross-checked against
//!   QEMU's `NvmeIdNsZoned`: ZOC 0, OZCS 2, MAR 4, MOR 8, NUMZRWA 44,
//!   ZRWAFG 48, ZRWASZ 50, ZRWACAP 52).

use std::mem::size_of;

const IOC_NRBITS: u32 = 8;
const IOC_TYPEBITS: u32 = 8;
const IOC_SIZEBITS: u32 = 14;
const IOC_NRSHIFT: u32 = 0;
const IOC_TYPESHIFT: u32 = IOC_NRSHIFT + IOC_NRBITS;
const IOC_SIZESHIFT: u32 = IOC_TYPESHIFT + IOC_TYPEBITS;
const IOC_DIRSHIFT: u32 = IOC_SIZESHIFT + IOC_SIZEBITS;
const IOC_NONE: u32 = 0;
const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

const fn ioc(dir: u32, ty: u8, nr: u8, size: usize) -> u64 {
    ((dir << IOC_DIRSHIFT)
        | ((ty as u32) << IOC_TYPESHIFT)
        | ((nr as u32) << IOC_NRSHIFT)
        | ((size as u32) << IOC_SIZESHIFT)) as u64
}

/// `struct blk_zone` (64 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct BlkZone {
    /// Zone start sector.
    pub start: u64,
    /// Zone size in sectors.
    pub len: u64,
    /// Write pointer sector.
    pub wp: u64,
    pub zone_type: u8,
    pub cond: u8,
    pub non_seq: u8,
    pub reset: u8,
    pub resv: [u8; 4],
    /// Zone capacity in sectors (valid with `BLK_ZONE_REP_CAPACITY`).
    pub capacity: u64,
    pub reserved: [u8; 24],
}

impl BlkZone {
    /// The struct as the kernel lays it out (native byte order), for a
    /// server that hands zone reports to the kernel.
    pub fn to_bytes(&self) -> [u8; 64] {
        let mut out = [0u8; 64];
        out[0..8].copy_from_slice(&self.start.to_ne_bytes());
        out[8..16].copy_from_slice(&self.len.to_ne_bytes());
        out[16..24].copy_from_slice(&self.wp.to_ne_bytes());
        out[24] = self.zone_type;
        out[25] = self.cond;
        out[26] = self.non_seq;
        out[27] = self.reset;
        out[28..32].copy_from_slice(&self.resv);
        out[32..40].copy_from_slice(&self.capacity.to_ne_bytes());
        out[40..64].copy_from_slice(&self.reserved);
        out
    }
}

/// `struct blk_zone_report` without its flexible `zones[]` array (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct BlkZoneReportHdr {
    pub sector: u64,
    /// In: room in `zones[]`; out: zones reported.
    pub nr_zones: u32,
    pub flags: u32,
}

/// `struct blk_zone_range` (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct BlkZoneRange {
    pub sector: u64,
    pub nr_sectors: u64,
}

/// `struct nvme_passthru_cmd` (72 bytes), also `struct nvme_admin_cmd`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct NvmePassthruCmd {
    pub opcode: u8,
    pub flags: u8,
    pub rsvd1: u16,
    pub nsid: u32,
    pub cdw2: u32,
    pub cdw3: u32,
    pub metadata: u64,
    pub addr: u64,
    pub metadata_len: u32,
    pub data_len: u32,
    pub cdw10: u32,
    pub cdw11: u32,
    pub cdw12: u32,
    pub cdw13: u32,
    pub cdw14: u32,
    pub cdw15: u32,
    pub timeout_ms: u32,
    pub result: u32,
}

/// `struct nvme_passthru_cmd64` (80 bytes): a 64-bit result (zone append).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct NvmePassthruCmd64 {
    pub opcode: u8,
    pub flags: u8,
    pub rsvd1: u16,
    pub nsid: u32,
    pub cdw2: u32,
    pub cdw3: u32,
    pub metadata: u64,
    pub addr: u64,
    pub metadata_len: u32,
    pub data_len: u32,
    pub cdw10: u32,
    pub cdw11: u32,
    pub cdw12: u32,
    pub cdw13: u32,
    pub cdw14: u32,
    pub cdw15: u32,
    pub timeout_ms: u32,
    pub rsvd2: u32,
    pub result: u64,
}

pub const BLKREPORTZONE: u64 = ioc(
    IOC_READ | IOC_WRITE,
    0x12,
    130,
    size_of::<BlkZoneReportHdr>(),
);
pub const BLKRESETZONE: u64 = ioc(IOC_WRITE, 0x12, 131, size_of::<BlkZoneRange>());
pub const BLKGETZONESZ: u64 = ioc(IOC_READ, 0x12, 132, size_of::<u32>());
pub const BLKGETNRZONES: u64 = ioc(IOC_READ, 0x12, 133, size_of::<u32>());
pub const BLKOPENZONE: u64 = ioc(IOC_WRITE, 0x12, 134, size_of::<BlkZoneRange>());
pub const BLKCLOSEZONE: u64 = ioc(IOC_WRITE, 0x12, 135, size_of::<BlkZoneRange>());
pub const BLKFINISHZONE: u64 = ioc(IOC_WRITE, 0x12, 136, size_of::<BlkZoneRange>());
pub const BLKSSZGET: u64 = ioc(IOC_NONE, 0x12, 104, 0);
pub const BLKPBSZGET: u64 = ioc(IOC_NONE, 0x12, 123, 0);
pub const BLKGETSIZE64: u64 = ioc(IOC_READ, 0x12, 114, size_of::<usize>());

pub const NVME_IOCTL_ID: u64 = ioc(IOC_NONE, b'N', 0x40, 0);
pub const NVME_IOCTL_ADMIN_CMD: u64 = ioc(
    IOC_READ | IOC_WRITE,
    b'N',
    0x41,
    size_of::<NvmePassthruCmd>(),
);
pub const NVME_IOCTL_IO64_CMD: u64 = ioc(
    IOC_READ | IOC_WRITE,
    b'N',
    0x48,
    size_of::<NvmePassthruCmd64>(),
);

/// `BLK_ZONE_REP_CAPACITY`: the report's `capacity` fields are valid.
pub const BLK_ZONE_REP_CAPACITY: u32 = 1 << 0;
/// `BLK_ZONE_TYPE_SEQWRITE_REQ`.
pub const BLK_ZONE_TYPE_SEQWRITE_REQ: u8 = 2;

// BLK_ZONE_COND_* (the NVMe zone state values).
pub const BLK_ZONE_COND_NOT_WP: u8 = 0x0;
pub const BLK_ZONE_COND_EMPTY: u8 = 0x1;
pub const BLK_ZONE_COND_IMP_OPEN: u8 = 0x2;
pub const BLK_ZONE_COND_EXP_OPEN: u8 = 0x3;
pub const BLK_ZONE_COND_CLOSED: u8 = 0x4;
pub const BLK_ZONE_COND_READONLY: u8 = 0xD;
pub const BLK_ZONE_COND_FULL: u8 = 0xE;
pub const BLK_ZONE_COND_OFFLINE: u8 = 0xF;

// NVMe opcodes.
pub const NVME_ADMIN_IDENTIFY: u8 = 0x06;
pub const NVME_CMD_WRITE: u8 = 0x01;
pub const NVME_CMD_ZONE_MGMT_SEND: u8 = 0x79;
pub const NVME_CMD_ZONE_APPEND: u8 = 0x7D;
pub const NVME_CMD_ZONE_MGMT_RECV: u8 = 0x7A;
/// Zone Management Receive: bytes of the report header before the first
/// 64-byte zone descriptor; a descriptor's zone attributes are its byte 2.
pub const ZMR_HEADER_BYTES: usize = 64;
pub const ZONE_DESC_ATTRS: usize = 2;
/// Zone attribute bit 3: ZRWAV (a ZRWA is allocated to the zone).
pub const ZONE_ATTR_ZRWAV: u8 = 1 << 3;
/// Identify CNS 05h: I/O command set specific Identify Namespace.
pub const NVME_ID_CNS_CS_NS: u32 = 0x05;
/// Command set identifier of the zoned namespace command set.
pub const NVME_CSI_ZNS: u32 = 0x02;
/// Zone Management Send CDW13 bit 8: Select All.
pub const NVME_ZMS_SELECT_ALL: u32 = 1 << 8;
/// Zone Management Send CDW13 bit 9: ZRWAA (allocate a ZRWA on open).
pub const NVME_ZMS_ZRWAA: u32 = 1 << 9;
/// The status bits of a passthrough return value that carry SCT and SC.
pub const NVME_STATUS_SCT_SC_MASK: u32 = 0x7FF;

// ZNS Identify Namespace (CNS 05h, CSI 02h) byte offsets.
pub const ID_NS_ZNS_OZCS: usize = 2;
pub const ID_NS_ZNS_MAR: usize = 4;
pub const ID_NS_ZNS_MOR: usize = 8;
pub const ID_NS_ZNS_NUMZRWA: usize = 44;
pub const ID_NS_ZNS_ZRWAFG: usize = 48;
pub const ID_NS_ZNS_ZRWASZ: usize = 50;
pub const ID_NS_ZNS_ZRWACAP: usize = 52;
/// OZCS bit 0: read across zone boundaries.
pub const OZCS_RAZB: u16 = 1 << 0;
/// OZCS bit 1: ZRWA supported.
pub const OZCS_ZRWASUP: u16 = 1 << 1;
/// ZRWACAP bit 0: explicit ZRWA flush supported.
pub const ZRWACAP_EXPFLUSHSUP: u8 = 1 << 0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_sizes_match_the_kernel_headers() {
        assert_eq!(size_of::<BlkZone>(), 64);
        assert_eq!(size_of::<BlkZoneReportHdr>(), 16);
        assert_eq!(size_of::<BlkZoneRange>(), 16);
        assert_eq!(size_of::<NvmePassthruCmd>(), 72);
        assert_eq!(size_of::<NvmePassthruCmd64>(), 80);
    }

    #[test]
    #[allow(clippy::unnecessary_cast)] // libc's ioctl type differs between targets
    fn ioctl_numbers_match_known_values() {
        // the values the kernel headers expand to on x86-64
        assert_eq!(BLKREPORTZONE, 0xC010_1282);
        assert_eq!(BLKRESETZONE, 0x4010_1283);
        assert_eq!(BLKGETZONESZ, 0x8004_1284);
        assert_eq!(BLKGETNRZONES, 0x8004_1285);
        assert_eq!(BLKOPENZONE, 0x4010_1286);
        assert_eq!(BLKCLOSEZONE, 0x4010_1287);
        assert_eq!(BLKFINISHZONE, 0x4010_1288);
        assert_eq!(NVME_IOCTL_ID, 0x4E40);
        assert_eq!(NVME_IOCTL_ADMIN_CMD, 0xC048_4E41);
        assert_eq!(NVME_IOCTL_IO64_CMD, 0xC050_4E48);
        // and the ones the libc crate carries
        assert_eq!(BLKSSZGET, libc::BLKSSZGET as u64);
        assert_eq!(BLKPBSZGET, libc::BLKPBSZGET as u64);
        assert_eq!(BLKGETSIZE64, 0x8008_1272);
    }
}
