//! The controller's data structures as the host reads them: Identify
//! Controller and Namespace (NVMe Base 2.0 §5.17; the ZNS command set's
//! CNS 05h/06h pages with the ZRWA capabilities, ZNS 1.1 §4.1), the active
//! namespace list, the namespace identification descriptors (with the
//! Command Set Identifier, without which Linux drops the namespace), and
//! the Commands Supported and Effects log (with Zone Append, without which
//! Linux makes a zoned namespace read-only). Pure: bytes from numbers.

use zns_core::ZonedConfig;

use crate::command::opcode;

/// Every Identify page and the effects log are 4 KiB.
pub const PAGE_BYTES: usize = 4096;
/// The memory page size the controller works in (CAP.MPSMIN = 0: 4 KiB):
/// the unit of MDTS and ZASL.
pub const MIN_PAGE_BYTES: u64 = 4096;
/// Command set identifiers.
pub const CSI_NVM: u8 = 0x00;
pub const CSI_ZNS: u8 = 0x02;
/// NVMe version 1.4 (VS): the host then reads namespaces through CNS 00h
/// and the descriptor list, the pages below.
pub const VERSION_1_4: u32 = 0x0001_0400;
/// In-capsule data an I/O command may carry (IOCCSZ: SQE + this), bytes.
pub const IN_CAPSULE_DATA_BYTES: u32 = 8192;
/// SQE and CQE sizes as Identify reports them (log2 of bytes).
const SQES: u8 = 0x66;
const CQES: u8 = 0x44;

/// What a namespace is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NsKind {
    Zoned(ZonedConfig),
    Conventional {
        lba_bytes: u32,
        capacity_lbas: u64,
        max_transfer_lbas: u32,
    },
}

/// One namespace of the subsystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    pub nsid: u32,
    pub kind: NsKind,
    /// Its UUID (a namespace identification descriptor), stable for a
    /// subsystem NQN and NSID.
    pub uuid: [u8; 16],
}

impl Namespace {
    pub fn lba_bytes(&self) -> u32 {
        match &self.kind {
            NsKind::Zoned(c) => c.lba_bytes,
            NsKind::Conventional { lba_bytes, .. } => *lba_bytes,
        }
    }

    pub fn capacity_lbas(&self) -> u64 {
        match &self.kind {
            NsKind::Zoned(c) => c.total_lbas(),
            NsKind::Conventional { capacity_lbas, .. } => *capacity_lbas,
        }
    }

    pub fn max_transfer_bytes(&self) -> u64 {
        let lbas = match &self.kind {
            NsKind::Zoned(c) => c.max_transfer_lbas,
            NsKind::Conventional {
                max_transfer_lbas, ..
            } => *max_transfer_lbas,
        };
        u64::from(lbas) * u64::from(self.lba_bytes())
    }

    pub fn csi(&self) -> u8 {
        match self.kind {
            NsKind::Zoned(_) => CSI_ZNS,
            NsKind::Conventional { .. } => CSI_NVM,
        }
    }

    pub fn zoned(&self) -> Option<&ZonedConfig> {
        match &self.kind {
            NsKind::Zoned(c) => Some(c),
            NsKind::Conventional { .. } => None,
        }
    }
}

/// A stable UUID (RFC 4122 version 4 layout) for namespace `nsid` of
/// subsystem `nqn`: two CRC32C chains over the name, so the same export
/// has the same identifiers on every run (multipath matches on them).
pub fn namespace_uuid(nqn: &str, nsid: u32) -> [u8; 16] {
    let mut u = [0u8; 16];
    let mut seed = crc32c::crc32c(nqn.as_bytes());
    for (i, part) in u.chunks_exact_mut(4).enumerate() {
        seed = crc32c::crc32c_append(
            seed,
            &[nsid.to_le_bytes(), (i as u32).to_le_bytes()].concat(),
        );
        part.copy_from_slice(&seed.to_le_bytes());
    }
    u[6] = (u[6] & 0x0F) | 0x40;
    u[8] = (u[8] & 0x3F) | 0x80;
    u
}

/// The controller-wide identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerIdentity {
    pub subnqn: String,
    /// Serial number (SN, 20 ASCII characters).
    pub serial: String,
    /// Model number (MN, 40 ASCII characters).
    pub model: String,
    /// Firmware revision (FR, 8 ASCII characters).
    pub firmware: String,
    /// MDTS: the largest transfer is 2^mdts × 4 KiB.
    pub mdts: u8,
    /// The I/O queue size granted (MAXCMD and CAP.MQES + 1).
    pub queue_entries: u16,
}

/// log2 of `bytes` in 4 KiB pages, rounded down, at least 1 (0 would mean
/// "no limit"): MDTS and ZASL.
pub fn pages_log2(bytes: u64) -> u8 {
    let pages = (bytes / MIN_PAGE_BYTES).max(2);
    (63 - pages.leading_zeros()) as u8
}

fn put(page: &mut [u8], at: usize, bytes: &[u8]) {
    page[at..at + bytes.len()].copy_from_slice(bytes);
}

/// `s` in a space-padded ASCII field of `len` bytes.
fn put_ascii(page: &mut [u8], at: usize, len: usize, s: &str) {
    let field = &mut page[at..at + len];
    field.fill(b' ');
    for (d, c) in field
        .iter_mut()
        .zip(s.bytes().filter(|c| c.is_ascii_graphic() || *c == b' '))
    {
        *d = c;
    }
}

/// Identify Controller (CNS 01h) for controller `cntlid` of a subsystem of
/// `nn` namespaces.
pub fn controller(id: &ControllerIdentity, cntlid: u16, nn: u32) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_BYTES];
    put_ascii(&mut p, 4, 20, &id.serial);
    put_ascii(&mut p, 24, 40, &id.model);
    put_ascii(&mut p, 64, 8, &id.firmware);
    p[77] = id.mdts;
    put(&mut p, 78, &cntlid.to_le_bytes());
    put(&mut p, 80, &VERSION_1_4.to_le_bytes());
    p[111] = 1; // CNTRLTYPE: I/O controller
    p[259] = 3; // AERL: 4 outstanding Asynchronous Event Requests
                // LPA: bit 1 Commands Supported and Effects log, bit 2 extended data
                // (NUMDU, LPO) for Get Log Page
    p[261] = (1 << 1) | (1 << 2);
    put(&mut p, 320, &1u16.to_le_bytes()); // KAS: 100 ms granularity
    p[512] = SQES;
    p[513] = CQES;
    put(&mut p, 514, &id.queue_entries.to_le_bytes()); // MAXCMD
    put(&mut p, 516, &nn.to_le_bytes());
    put(&mut p, 520, &(1u16 << 3).to_le_bytes()); // ONCS: Write Zeroes
    p[525] = 1; // VWC: a volatile write cache (Flush makes writes durable)
                // SGLS: SGLs supported (no alignment), the address field as an offset
    put(&mut p, 536, &(1u32 | 1 << 20).to_le_bytes());
    put(&mut p, 540, &nn.to_le_bytes()); // MNAN
    let nqn = id.subnqn.as_bytes();
    put(&mut p, 768, &nqn[..nqn.len().min(255)]);
    // fabrics: IOCCSZ, IORCSZ in 16-byte units; ICDOFF 0; MSDBD 1
    put(
        &mut p,
        1792,
        &((64 + IN_CAPSULE_DATA_BYTES) / 16).to_le_bytes(),
    );
    put(&mut p, 1796, &1u32.to_le_bytes());
    p[1803] = 1;
    p
}

/// Identify Namespace (CNS 00h): size, capacity, utilization and the one
/// LBA format.
pub fn namespace(ns: &Namespace) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_BYTES];
    let lbas = ns.capacity_lbas();
    put(&mut p, 0, &lbas.to_le_bytes()); // NSZE
    put(&mut p, 8, &lbas.to_le_bytes()); // NCAP
    put(&mut p, 16, &lbas.to_le_bytes()); // NUSE
                                          // NLBAF 0 (one format), FLBAS 0; LBAF0: LBADS = log2(block size)
    let lbads = ns.lba_bytes().trailing_zeros();
    put(&mut p, 128, &(lbads << 16).to_le_bytes());
    p
}

/// ZNS Identify Namespace (CNS 05h, CSI 02h): zone operation
/// characteristics, the ZRWA capabilities, the open/active limits, the
/// zone size.
pub fn zns_namespace(c: &ZonedConfig) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_BYTES];
    let zeros_based = |n: u32| if n == 0 { u32::MAX } else { n - 1 };
    let mut ozcs = u16::from(c.read_across_zone_boundary);
    if let Some(z) = &c.zrwa {
        ozcs |= 1 << 1; // ZRWASUP
        put(&mut p, 44, &z.resources.saturating_sub(1).to_le_bytes()); // NUMZRWA, 0's based
        put(&mut p, 48, &(z.flush_granularity_lbas as u16).to_le_bytes()); // ZRWAFG
        put(&mut p, 50, &(z.size_lbas as u16).to_le_bytes()); // ZRWASZ
        p[52] = 1; // ZRWACAP: explicit ZRWA flush supported
    }
    put(&mut p, 2, &ozcs.to_le_bytes());
    put(&mut p, 4, &zeros_based(c.max_active_zones).to_le_bytes()); // MAR
    put(&mut p, 8, &zeros_based(c.max_open_zones).to_le_bytes()); // MOR
    put(&mut p, 2816, &c.zone_size_lbas.to_le_bytes()); // LBAFE0.ZSZE (ZDES 0)
    p
}

/// ZNS Identify Controller (CNS 06h, CSI 02h): the zone append size limit
/// (`zasl`: 2^zasl × 4 KiB, or 0 for MDTS).
pub fn zns_controller(zasl: u8) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_BYTES];
    p[0] = zasl;
    p
}

/// NVM Identify Controller (CNS 06h, CSI 00h): Write Zeroes takes at most
/// `wzsl` (2^wzsl × 4 KiB, as MDTS); no other limits.
pub fn nvm_controller(wzsl: u8) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_BYTES];
    p[1] = wzsl;
    p
}

/// Active Namespace ID list (CNS 02h, or 07h for one command set): the
/// NSIDs greater than `after`, ascending.
pub fn active_namespaces(nss: &[Namespace], after: u32, csi: Option<u8>) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_BYTES];
    let ids = nss
        .iter()
        .filter(|ns| ns.nsid > after && csi.map_or(true, |c| ns.csi() == c))
        .map(|ns| ns.nsid);
    for (slot, nsid) in p.chunks_exact_mut(4).zip(ids) {
        slot.copy_from_slice(&nsid.to_le_bytes());
    }
    p
}

/// Namespace Identification Descriptor list (CNS 03h): the UUID and the
/// Command Set Identifier.
pub fn ns_descriptors(ns: &Namespace) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_BYTES];
    // NIDT 03h UUID (NIDL 16), then NIDT 04h CSI (NIDL 1)
    p[0] = 0x03;
    p[1] = 16;
    put(&mut p, 4, &ns.uuid);
    p[20] = 0x04;
    p[21] = 1;
    p[24] = ns.csi();
    p
}

/// Commands Supported and Effects log (Log Page 05h) for command set
/// `csi`: CSUPP for each admin and I/O command the controller takes, LBCC
/// for those that change the namespace's contents.
pub fn effects_log(csi: u8) -> Vec<u8> {
    const CSUPP: u32 = 1 << 0;
    const LBCC: u32 = 1 << 1;
    let mut p = vec![0u8; PAGE_BYTES];
    let admin = [
        opcode::GET_LOG_PAGE,
        opcode::IDENTIFY,
        opcode::ABORT,
        opcode::SET_FEATURES,
        opcode::GET_FEATURES,
        opcode::ASYNC_EVENT_REQUEST,
        opcode::KEEP_ALIVE,
    ];
    for op in admin {
        put(&mut p, usize::from(op) * 4, &CSUPP.to_le_bytes());
    }
    let mut io = vec![
        (opcode::FLUSH, CSUPP),
        (opcode::WRITE, CSUPP | LBCC),
        (opcode::READ, CSUPP),
        (opcode::WRITE_ZEROES, CSUPP | LBCC),
    ];
    if csi == CSI_ZNS {
        io.extend([
            (opcode::ZONE_MGMT_SEND, CSUPP | LBCC),
            (opcode::ZONE_MGMT_RECV, CSUPP),
            (opcode::ZONE_APPEND, CSUPP | LBCC),
        ]);
    }
    for (op, bits) in io {
        put(&mut p, 1024 + usize::from(op) * 4, &bits.to_le_bytes());
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in ZN540 profile's zoned namespace.
    fn zn540_like() -> ZonedConfig {
        match &zns_device::Profile::builtin("zn540").unwrap().namespaces[0] {
            zns_device::NamespaceProfile::Zoned(c) => c.clone(),
            other => panic!("zn540's namespace 1 is zoned, not {other:?}"),
        }
    }

    fn u32_at(p: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(p[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn zns_identify_namespace_has_the_fields_at_the_spec_offsets() {
        let p = zns_namespace(&zn540_like());
        assert_eq!(u16::from_le_bytes([p[2], p[3]]), 0b10, "OZCS: ZRWASUP");
        assert_eq!(
            (u32_at(&p, 4), u32_at(&p, 8)),
            (13, 13),
            "MAR, MOR 0's based"
        );
        assert_eq!(u32_at(&p, 44), 13, "NUMZRWA 0's based");
        assert_eq!(u16::from_le_bytes([p[48], p[49]]), 4, "ZRWAFG");
        assert_eq!(u16::from_le_bytes([p[50], p[51]]), 256, "ZRWASZ");
        assert_eq!(p[52], 1, "ZRWACAP.EXPFLUSHSUP");
        assert_eq!(u32_at(&p, 2816), 524288, "ZSZE");
    }

    #[test]
    fn descriptors_carry_the_csi_and_effects_carry_zone_append() {
        let ns = Namespace {
            nsid: 2,
            kind: NsKind::Zoned(zn540_like()),
            uuid: namespace_uuid("nqn.test", 2),
        };
        let d = ns_descriptors(&ns);
        assert_eq!((d[20], d[21], d[24]), (0x04, 1, CSI_ZNS));
        assert_eq!(d[4 + 6] >> 4, 4, "a version 4 UUID");
        assert_ne!(namespace_uuid("nqn.test", 1), ns.uuid);
        let log = effects_log(CSI_ZNS);
        assert_eq!(
            u32_at(&log, 1024 + 0x7D * 4),
            0b11,
            "Zone Append: CSUPP, LBCC"
        );
        assert_eq!(u32_at(&effects_log(CSI_NVM), 1024 + 0x7D * 4), 0);
        let list = active_namespaces(std::slice::from_ref(&ns), 1, None);
        assert_eq!((u32_at(&list, 0), u32_at(&list, 4)), (2, 0));
        assert_eq!(u32_at(&active_namespaces(&[ns], 2, None), 0), 0);
    }

    #[test]
    fn identify_controller_satisfies_linux_fabrics_checks() {
        let id = ControllerIdentity {
            subnqn: "nqn.2026-11.org.znskit:zn540".into(),
            serial: "ZNSKIT0001".into(),
            model: "znskit ZN540".into(),
            firmware: "0.1.0".into(),
            mdts: pages_log2(512 * 1024),
            queue_entries: 128,
        };
        let p = controller(&id, 7, 2);
        assert_eq!(p[77], 7, "MDTS 512 KiB");
        assert_eq!(u16::from_le_bytes([p[78], p[79]]), 7);
        assert_ne!(u16::from_le_bytes([p[320], p[321]]), 0, "KAS");
        assert!(
            u32_at(&p, 1792) >= 4 && u32_at(&p, 1796) >= 1,
            "IOCCSZ, IORCSZ"
        );
        assert_eq!(u16::from_le_bytes([p[1800], p[1801]]), 0, "ICDOFF");
        assert_eq!(u32_at(&p, 536) & 3, 1, "SGLs");
        assert_eq!(p[261] & 2, 2, "LPA: effects log");
        assert_eq!(&p[768..768 + 28], id.subnqn.as_bytes());
        assert_eq!(&p[24..36], b"znskit ZN540");
    }
}
