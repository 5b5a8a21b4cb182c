//! NVMe submission and completion queue entries as they travel in capsules
//! (NVMe Base Specification 2.0, §4.1 and §4.2; NVMe over Fabrics 1.1,
//! §2): the 64-byte SQE with its SGL descriptor, the 16-byte CQE, and the
//! completion status (SCT, SC, DNR). A device's own statuses come from
//! zns-core ([`NvmeStatus`]); the few that only a controller's admin and
//! fabrics commands post are named here.

use zns_core::NvmeStatus;

/// Opcodes and field values used by the target.
pub mod opcode {
    // admin
    pub const GET_LOG_PAGE: u8 = 0x02;
    pub const IDENTIFY: u8 = 0x06;
    pub const ABORT: u8 = 0x08;
    pub const SET_FEATURES: u8 = 0x09;
    pub const GET_FEATURES: u8 = 0x0A;
    pub const ASYNC_EVENT_REQUEST: u8 = 0x0C;
    pub const KEEP_ALIVE: u8 = 0x18;
    pub const FABRICS: u8 = 0x7F;
    // I/O
    pub const FLUSH: u8 = 0x00;
    pub const WRITE: u8 = 0x01;
    pub const READ: u8 = 0x02;
    pub const WRITE_ZEROES: u8 = 0x08;
    pub const ZONE_MGMT_SEND: u8 = 0x79;
    pub const ZONE_MGMT_RECV: u8 = 0x7A;
    pub const ZONE_APPEND: u8 = 0x7D;
}

/// Fabrics command types (SQE byte 4 of opcode 7Fh).
pub mod fctype {
    pub const PROPERTY_SET: u8 = 0x00;
    pub const CONNECT: u8 = 0x01;
    pub const PROPERTY_GET: u8 = 0x04;
}

/// SGL descriptor identifiers (the descriptor's byte 15) NVMe/TCP uses.
pub mod sgl {
    /// Data Block, offset subtype: the data is in the capsule.
    pub const IN_CAPSULE: u8 = 0x01;
    /// Transport Data Block, transport-specific subtype: the data moves in
    /// H2CData (after an R2T) or C2HData PDUs.
    pub const TRANSPORT: u8 = 0x5A;
}

/// A completion status: SCT and SC, and Do Not Retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status {
    pub sct: u8,
    pub sc: u8,
    pub dnr: bool,
}

impl Status {
    pub const SUCCESS: Status = Status::generic(0x00);
    pub const INVALID_OPCODE: Status = Status::generic(0x01).no_retry();
    pub const INVALID_FIELD: Status = Status::generic(0x02).no_retry();
    pub const DATA_TRANSFER_ERROR: Status = Status::generic(0x04);
    pub const INTERNAL_ERROR: Status = Status::generic(0x06);
    pub const COMMAND_SEQUENCE_ERROR: Status = Status::generic(0x0C).no_retry();
    pub const INVALID_NAMESPACE: Status = Status::generic(0x0B).no_retry();
    pub const SGL_INVALID_TYPE: Status = Status::generic(0x11).no_retry();
    pub const SGL_INVALID_DATA_LENGTH: Status = Status::generic(0x0F).no_retry();
    pub const LBA_OUT_OF_RANGE: Status = Status::generic(0x80).no_retry();
    pub const INVALID_QUEUE_ID: Status = Status::specific(0x01).no_retry();
    pub const INVALID_QUEUE_SIZE: Status = Status::specific(0x02).no_retry();
    pub const INVALID_LOG_PAGE: Status = Status::specific(0x09).no_retry();
    pub const FEATURE_NOT_SAVEABLE: Status = Status::specific(0x0D).no_retry();
    pub const CONNECT_INVALID_PARAMETERS: Status = Status::specific(0x82).no_retry();
    pub const CONNECT_INVALID_HOST: Status = Status::specific(0x84).no_retry();

    const fn generic(sc: u8) -> Status {
        Status {
            sct: 0,
            sc,
            dnr: false,
        }
    }

    const fn specific(sc: u8) -> Status {
        Status {
            sct: 1,
            sc,
            dnr: false,
        }
    }

    const fn no_retry(self) -> Status {
        Status { dnr: true, ..self }
    }

    pub fn is_success(self) -> bool {
        self.sct == 0 && self.sc == 0
    }

    /// The CQE's status field (DW3 bits 31:17, shifted down: bits 15:1),
    /// phase bit clear.
    pub fn field(self) -> u16 {
        (u16::from(self.sc) << 1) | (u16::from(self.sct & 0x7) << 9) | (u16::from(self.dnr) << 15)
    }

    pub fn from_field(field: u16) -> Status {
        Status {
            sc: (field >> 1) as u8,
            sct: ((field >> 9) & 0x7) as u8,
            dnr: field & (1 << 15) != 0,
        }
    }
}

/// The device's own status, as the emulated controller posts it; a status
/// a retry cannot change (every one but a power loss and a failed path) has
/// Do Not Retry.
impl From<NvmeStatus> for Status {
    fn from(s: NvmeStatus) -> Status {
        Status {
            sct: s.sct(),
            sc: s.sc(),
            dnr: !matches!(
                s,
                NvmeStatus::AbortedPowerLoss | NvmeStatus::HostPathingError
            ),
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SCT {:X}h SC {:02X}h", self.sct, self.sc)?;
        if self.dnr {
            write!(f, " DNR")?;
        }
        Ok(())
    }
}

/// A submission queue entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sqe(pub [u8; 64]);

/// An SQE's first data pointer as an SGL descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SglDesc {
    pub address: u64,
    pub length: u32,
    pub id: u8,
}

impl Sqe {
    /// An SQE with `opcode` and `cid`, everything else zero.
    pub fn new(opcode: u8, cid: u16) -> Sqe {
        let mut b = [0u8; 64];
        b[0] = opcode;
        b[2..4].copy_from_slice(&cid.to_le_bytes());
        Sqe(b)
    }

    pub fn opcode(&self) -> u8 {
        self.0[0]
    }

    /// PSDT (flags bits 7:6): 01b or 10b for SGLs, which fabrics require.
    pub fn psdt(&self) -> u8 {
        self.0[1] >> 6
    }

    pub fn cid(&self) -> u16 {
        u16::from_le_bytes([self.0[2], self.0[3]])
    }

    pub fn nsid(&self) -> u32 {
        self.dword(1)
    }

    /// Fabrics commands: the command type (byte 4).
    pub fn fctype(&self) -> u8 {
        self.0[4]
    }

    /// Command dword `n` (0..16).
    pub fn dword(&self, n: usize) -> u32 {
        let at = n * 4;
        u32::from_le_bytes([self.0[at], self.0[at + 1], self.0[at + 2], self.0[at + 3]])
    }

    /// CDW10 and CDW11 as one 64-bit value (an SLBA).
    pub fn qword10(&self) -> u64 {
        u64::from(self.dword(10)) | u64::from(self.dword(11)) << 32
    }

    pub fn sgl(&self) -> SglDesc {
        let d = &self.0[24..40];
        SglDesc {
            address: u64::from_le_bytes(d[..8].try_into().unwrap_or([0; 8])),
            length: u32::from_le_bytes([d[8], d[9], d[10], d[11]]),
            id: d[15],
        }
    }

    pub fn set_nsid(&mut self, nsid: u32) -> &mut Sqe {
        self.set_dword(1, nsid)
    }

    pub fn set_dword(&mut self, n: usize, v: u32) -> &mut Sqe {
        self.0[n * 4..n * 4 + 4].copy_from_slice(&v.to_le_bytes());
        self
    }

    pub fn set_qword10(&mut self, v: u64) -> &mut Sqe {
        self.set_dword(10, v as u32).set_dword(11, (v >> 32) as u32)
    }

    /// An SGL data pointer (PSDT 01b).
    pub fn set_sgl(&mut self, d: SglDesc) -> &mut Sqe {
        self.0[1] = (self.0[1] & 0x3F) | 1 << 6;
        self.0[24..32].copy_from_slice(&d.address.to_le_bytes());
        self.0[32..36].copy_from_slice(&d.length.to_le_bytes());
        self.0[36..39].fill(0);
        self.0[39] = d.id;
        self
    }
}

/// A completion queue entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cqe {
    /// DW0 and DW1: the command-specific result (a zone append's LBA, a
    /// property's value, Connect's controller ID).
    pub result: u64,
    pub sqhd: u16,
    pub sqid: u16,
    pub cid: u16,
    pub status: Status,
}

impl Cqe {
    pub fn encode(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.result.to_le_bytes());
        b[8..10].copy_from_slice(&self.sqhd.to_le_bytes());
        b[10..12].copy_from_slice(&self.sqid.to_le_bytes());
        b[12..14].copy_from_slice(&self.cid.to_le_bytes());
        b[14..16].copy_from_slice(&self.status.field().to_le_bytes());
        b
    }

    pub fn decode(b: &[u8; 16]) -> Cqe {
        Cqe {
            result: u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8])),
            sqhd: u16::from_le_bytes([b[8], b[9]]),
            sqid: u16::from_le_bytes([b[10], b[11]]),
            cid: u16::from_le_bytes([b[12], b[13]]),
            status: Status::from_field(u16::from_le_bytes([b[14], b[15]])),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_zoned_statuses_keep_their_codes_on_the_wire() {
        let s = Status::from(NvmeStatus::ZoneInvalidWrite);
        assert_eq!((s.sct, s.sc, s.dnr), (1, 0xBC, true));
        // DW3 bits 31:17 = SC 8 bits, SCT 3 bits, CRD, M, DNR
        assert_eq!(s.field(), (0xBC << 1) | (1 << 9) | (1 << 15));
        assert_eq!(Status::from_field(s.field()), s);
        assert!(!Status::from(NvmeStatus::AbortedPowerLoss).dnr);
    }

    #[test]
    fn cqe_and_sqe_fields_roundtrip() {
        let c = Cqe {
            result: 0x1_0000_0042,
            sqhd: 5,
            sqid: 1,
            cid: 77,
            status: Status::from(NvmeStatus::ZoneIsFull),
        };
        assert_eq!(Cqe::decode(&c.encode()), c);
        let mut s = Sqe::new(opcode::ZONE_APPEND, 9);
        s.set_nsid(2).set_qword10(0x80000).set_dword(12, 3);
        s.set_sgl(SglDesc {
            address: 0,
            length: 16384,
            id: sgl::IN_CAPSULE,
        });
        assert_eq!((s.opcode(), s.cid(), s.nsid()), (0x7D, 9, 2));
        assert_eq!((s.qword10(), s.dword(12), s.psdt()), (0x80000, 3, 1));
        assert_eq!(s.sgl().length, 16384);
        assert_eq!(s.sgl().id, sgl::IN_CAPSULE);
    }
}
