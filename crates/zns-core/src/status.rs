//! NVMe completion status values that znskit can return.
//!
//! Every rejection in the stack is one of these, so callers (and `zns replay`) can
//! print the same status a real controller would post: status code type (SCT) and
//! status code (SC) exactly as in the NVMe base and ZNS command-set specifications.

use serde::{Deserialize, Serialize};

/// An NVMe completion status other than success.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NvmeStatus {
    // ---- Generic command status (SCT 0h)
    /// 01h: opcode or zone send action not supported.
    InvalidOpcode,
    /// 02h: a field of the command is invalid (append not at ZSLBA, size > ZASL, bad ZRWA flush size, ...).
    InvalidField,
    /// 05h: command aborted because power was lost while it was in flight.
    AbortedPowerLoss,
    /// 06h: internal error.
    InternalError,
    /// 0Bh: invalid namespace or format.
    InvalidNamespace,
    /// 80h: LBA out of range.
    LbaOutOfRange,
    /// 82h: namespace not ready (the device is powered off).
    NamespaceNotReady,
    // ---- Command specific status (SCT 1h), zoned namespaces
    /// B6h: Invalid Zone Operation Request.
    InvalidZoneOperation,
    /// B7h: ZRWA Resources Unavailable.
    ZrwaResourcesUnavailable,
    /// B8h: Zone Boundary Error.
    ZoneBoundaryError,
    /// B9h: Zone Is Full.
    ZoneIsFull,
    /// BAh: Zone Is Read Only.
    ZoneIsReadOnly,
    /// BBh: Zone Is Offline.
    ZoneIsOffline,
    /// BCh: Zone Invalid Write (not at the write pointer / outside the ZRWA window).
    ZoneInvalidWrite,
    /// BDh: Too Many Active Zones.
    TooManyActiveZones,
    /// BEh: Too Many Open Zones.
    TooManyOpenZones,
    /// BFh: Invalid Zone State Transition.
    InvalidZoneStateTransition,
    // ---- Media and data integrity errors (SCT 2h)
    /// 80h: write fault.
    WriteFault,
    /// 81h: unrecovered read error.
    UnrecoveredReadError,
    // ---- Path related status (SCT 3h)
    /// 70h: host pathing error — the controller is gone (failed member).
    HostPathingError,
}

impl NvmeStatus {
    /// Every status, in code order (used by tests and documentation).
    pub const ALL: [NvmeStatus; 20] = [
        NvmeStatus::InvalidOpcode,
        NvmeStatus::InvalidField,
        NvmeStatus::AbortedPowerLoss,
        NvmeStatus::InternalError,
        NvmeStatus::InvalidNamespace,
        NvmeStatus::LbaOutOfRange,
        NvmeStatus::NamespaceNotReady,
        NvmeStatus::InvalidZoneOperation,
        NvmeStatus::ZrwaResourcesUnavailable,
        NvmeStatus::ZoneBoundaryError,
        NvmeStatus::ZoneIsFull,
        NvmeStatus::ZoneIsReadOnly,
        NvmeStatus::ZoneIsOffline,
        NvmeStatus::ZoneInvalidWrite,
        NvmeStatus::TooManyActiveZones,
        NvmeStatus::TooManyOpenZones,
        NvmeStatus::InvalidZoneStateTransition,
        NvmeStatus::WriteFault,
        NvmeStatus::UnrecoveredReadError,
        NvmeStatus::HostPathingError,
    ];

    /// Status code type (SCT).
    pub fn sct(self) -> u8 {
        use NvmeStatus::*;
        match self {
            InvalidOpcode | InvalidField | AbortedPowerLoss | InternalError | InvalidNamespace
            | LbaOutOfRange | NamespaceNotReady => 0x0,
            InvalidZoneOperation
            | ZrwaResourcesUnavailable
            | ZoneBoundaryError
            | ZoneIsFull
            | ZoneIsReadOnly
            | ZoneIsOffline
            | ZoneInvalidWrite
            | TooManyActiveZones
            | TooManyOpenZones
            | InvalidZoneStateTransition => 0x1,
            WriteFault | UnrecoveredReadError => 0x2,
            HostPathingError => 0x3,
        }
    }

    /// Status code (SC) within its type.
    pub fn sc(self) -> u8 {
        use NvmeStatus::*;
        match self {
            InvalidOpcode => 0x01,
            InvalidField => 0x02,
            AbortedPowerLoss => 0x05,
            InternalError => 0x06,
            InvalidNamespace => 0x0B,
            LbaOutOfRange => 0x80,
            NamespaceNotReady => 0x82,
            InvalidZoneOperation => 0xB6,
            ZrwaResourcesUnavailable => 0xB7,
            ZoneBoundaryError => 0xB8,
            ZoneIsFull => 0xB9,
            ZoneIsReadOnly => 0xBA,
            ZoneIsOffline => 0xBB,
            ZoneInvalidWrite => 0xBC,
            TooManyActiveZones => 0xBD,
            TooManyOpenZones => 0xBE,
            InvalidZoneStateTransition => 0xBF,
            WriteFault => 0x80,
            UnrecoveredReadError => 0x81,
            HostPathingError => 0x70,
        }
    }

    /// The 11-bit status field as nvme-cli prints it: `(SCT << 8) | SC`.
    pub fn code(self) -> u16 {
        ((self.sct() as u16) << 8) | self.sc() as u16
    }

    /// The name libnvme / nvme-cli uses for this status.
    pub fn name(self) -> &'static str {
        use NvmeStatus::*;
        match self {
            InvalidOpcode => "Invalid Command Opcode",
            InvalidField => "Invalid Field in Command",
            AbortedPowerLoss => "Commands Aborted due to Power Loss Notification",
            InternalError => "Internal Error",
            InvalidNamespace => "Invalid Namespace or Format",
            LbaOutOfRange => "LBA Out of Range",
            NamespaceNotReady => "Namespace Not Ready",
            InvalidZoneOperation => "Invalid Zone Operation Request",
            ZrwaResourcesUnavailable => "ZRWA Resources Unavailable",
            ZoneBoundaryError => "Zoned Boundary Error",
            ZoneIsFull => "Zone is Full",
            ZoneIsReadOnly => "Zone is Read Only",
            ZoneIsOffline => "Zone is Offline",
            ZoneInvalidWrite => "Zone Invalid Write",
            TooManyActiveZones => "Too Many Active Zones",
            TooManyOpenZones => "Too Many Open Zones",
            InvalidZoneStateTransition => "Invalid Zone State Transition",
            WriteFault => "Write Fault",
            UnrecoveredReadError => "Unrecovered Read Error",
            HostPathingError => "Host Pathing Error",
        }
    }
}

/// Linux's errno numbers (asm-generic/errno.h, the same on every Linux
/// architecture this project builds for), named for [`NvmeStatus::linux_errno`]
/// so that the table needs no `libc` and no Linux host.
mod linux_errno {
    pub const EIO: i32 = 5;
    pub const ENODATA: i32 = 61;
    pub const ENOLINK: i32 = 67;
    pub const EOVERFLOW: i32 = 75;
    pub const EOPNOTSUPP: i32 = 95;
    pub const ETOOMANYREFS: i32 = 109;
    pub const EREMOTEIO: i32 = 121;
}

impl NvmeStatus {
    /// The errno a Linux program sees for a command that failed with this
    /// status on an NVMe drive: the NVMe driver's `nvme_error_status()`
    /// composed with the block layer's `blk_status_t` to errno table
    /// (`blk_errors`, block/blk-core.c). Zone resource limits keep their
    /// own codes (`ETOOMANYREFS`, `EOVERFLOW`); every other zoned status is
    /// a plain `EIO`. fio's `error=` (zns-bench) and the served devices'
    /// failed requests (zns-serve, zns-fio) use it.
    pub fn linux_errno(self) -> i32 {
        use linux_errno::*;
        use NvmeStatus::*;
        match self {
            // BLK_STS_NOTSUPP
            InvalidOpcode | InvalidField | InvalidNamespace => EOPNOTSUPP,
            // BLK_STS_TARGET
            LbaOutOfRange | NamespaceNotReady => EREMOTEIO,
            // BLK_STS_MEDIUM
            WriteFault | UnrecoveredReadError => ENODATA,
            // BLK_STS_TRANSPORT
            HostPathingError => ENOLINK,
            // BLK_STS_ZONE_ACTIVE_RESOURCE / BLK_STS_ZONE_OPEN_RESOURCE
            TooManyActiveZones => EOVERFLOW,
            TooManyOpenZones => ETOOMANYREFS,
            // BLK_STS_IOERR (the driver's default)
            AbortedPowerLoss
            | InternalError
            | InvalidZoneOperation
            | ZrwaResourcesUnavailable
            | ZoneBoundaryError
            | ZoneIsFull
            | ZoneIsReadOnly
            | ZoneIsOffline
            | ZoneInvalidWrite
            | InvalidZoneStateTransition => EIO,
        }
    }
}

impl std::fmt::Display for NvmeStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (SCT {:X}h SC {:02X}h)",
            self.name(),
            self.sct(),
            self.sc()
        )
    }
}

/// A failed command: the NVMe status plus whether the failure was injected by a
/// fault (power loss, failed member, read error, forced read-only/offline zone),
/// so checkers can tell injected faults from bugs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[error("{status}{}", if *.injected { " [injected fault]" } else { "" })]
pub struct NvmeError {
    pub status: NvmeStatus,
    pub injected: bool,
}

impl NvmeError {
    pub fn injected(status: NvmeStatus) -> Self {
        NvmeError {
            status,
            injected: true,
        }
    }
}

impl From<NvmeStatus> for NvmeError {
    fn from(status: NvmeStatus) -> Self {
        NvmeError {
            status,
            injected: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_zoned_ones_span_b6_to_bf() {
        let mut seen = std::collections::HashSet::new();
        for s in NvmeStatus::ALL {
            assert!(seen.insert(s.code()), "duplicate code for {s:?}");
        }
        let zoned: Vec<u8> = NvmeStatus::ALL
            .iter()
            .filter(|s| s.sct() == 1)
            .map(|s| s.sc())
            .collect();
        assert_eq!(zoned, (0xB6..=0xBF).collect::<Vec<u8>>());
        assert_eq!(NvmeStatus::ZoneInvalidWrite.code(), 0x1BC);
    }
}
