//! The NVM subsystem and its controllers as the admin queue sees them
//! (pure: no device I/O, no sockets): Fabrics Connect (admin and I/O
//! queues, the dynamic controller model), Property Get/Set (CAP, VS, CC,
//! CSTS), Identify, Get Log Page, Set/Get Features (number of queues, async
//! event configuration, keep alive timer, volatile write cache), Keep
//! Alive, and Asynchronous Event Requests, which are held (the subsystem
//! raises no events).

use std::collections::HashMap;

use crate::command::{fctype, opcode, Sqe, Status};
use crate::identify::{self, ControllerIdentity, Namespace, CSI_NVM, CSI_ZNS, PAGE_BYTES};

/// Connect's data: 1024 bytes.
pub const CONNECT_DATA_BYTES: usize = 1024;
/// The admin queue's size the host may ask for (0's based SQSIZE + 1).
pub const ADMIN_QUEUE_ENTRIES: u16 = 32;
/// I/O queues a controller grants at most.
pub const MAX_IO_QUEUES: u16 = 8;
/// Register offsets (properties).
pub mod property {
    pub const CAP: u32 = 0x00;
    pub const VS: u32 = 0x08;
    pub const CC: u32 = 0x14;
    pub const CSTS: u32 = 0x1C;
}
const CC_EN: u32 = 1 << 0;
const CC_SHN_SHIFT: u32 = 14;
const CSTS_RDY: u32 = 1 << 0;
/// CSTS.SHST = 10b: shutdown processing complete.
const CSTS_SHST_COMPLETE: u32 = 0b10 << 2;
/// Feature identifiers.
mod fid {
    pub const VOLATILE_WRITE_CACHE: u8 = 0x06;
    pub const NUMBER_OF_QUEUES: u8 = 0x07;
    pub const ASYNC_EVENT_CONFIG: u8 = 0x0B;
    pub const KEEP_ALIVE_TIMER: u8 = 0x0F;
}
/// Log page identifiers.
const LID_COMMANDS_SUPPORTED_AND_EFFECTS: u8 = 0x05;

/// The subsystem: its identity and namespaces (NSIDs 1..).
#[derive(Debug, Clone)]
pub struct Subsystem {
    pub identity: ControllerIdentity,
    pub namespaces: Vec<Namespace>,
    /// ZASL of the ZNS controller page (0: the MDTS).
    pub zasl: u8,
}

impl Subsystem {
    pub fn namespace(&self, nsid: u32) -> Option<&Namespace> {
        self.namespaces.iter().find(|ns| ns.nsid == nsid)
    }

    /// CAP: MQES, CQR, TO (15 s), CSS (NVM and I/O command sets), MPSMIN
    /// = MPSMAX = 4 KiB.
    pub fn cap(&self) -> u64 {
        let mqes = u64::from(self.identity.queue_entries - 1);
        let cqr = 1 << 16;
        let timeout_500ms = 30 << 24;
        let css_nvm = 1 << 37;
        let css_io_sets = 1 << 43;
        mqes | cqr | timeout_500ms | css_nvm | css_io_sets
    }
}

/// One controller's registers and features.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ControllerState {
    pub hostnqn: String,
    pub cc: u32,
    pub csts: u32,
    /// Keep alive timeout, ms (0: none).
    pub kato_ms: u32,
    /// I/O queues granted (Set Features Number of Queues).
    pub io_queues: u16,
    pub async_event_config: u32,
}

impl ControllerState {
    pub fn ready(&self) -> bool {
        self.csts & CSTS_RDY != 0
    }
}

/// A decoded Connect command and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connect {
    pub qid: u16,
    /// Queue entries (SQSIZE + 1).
    pub queue_entries: u32,
    pub kato_ms: u32,
    pub cntlid: u16,
    pub subnqn: String,
    pub hostnqn: String,
}

fn nqn_at(data: &[u8], at: usize) -> String {
    let field = &data[at..at + 256];
    let end = field.iter().position(|&b| b == 0).unwrap_or(256);
    String::from_utf8_lossy(&field[..end]).into_owned()
}

impl Connect {
    pub fn decode(sqe: &Sqe, data: &[u8]) -> Result<Connect, Status> {
        if data.len() < CONNECT_DATA_BYTES || sqe.dword(10) & 0xFFFF != 0 {
            // (RECFMT 0 is the only record format)
            return Err(Status::CONNECT_INVALID_PARAMETERS);
        }
        Ok(Connect {
            qid: (sqe.dword(10) >> 16) as u16,
            queue_entries: (sqe.dword(11) & 0xFFFF) + 1,
            kato_ms: sqe.dword(12),
            cntlid: u16::from_le_bytes([data[16], data[17]]),
            subnqn: nqn_at(data, 256),
            hostnqn: nqn_at(data, 512),
        })
    }
}

/// The controllers of a subsystem, by controller ID.
#[derive(Debug, Default)]
pub struct Controllers {
    next_cntlid: u16,
    by_id: HashMap<u16, ControllerState>,
}

impl Controllers {
    /// An admin queue's Connect: a new controller; its ID.
    pub fn connect_admin(&mut self, sub: &Subsystem, c: &Connect) -> Result<u16, Status> {
        if c.subnqn != sub.identity.subnqn
            || c.queue_entries < 2
            || c.queue_entries > u32::from(ADMIN_QUEUE_ENTRIES)
        {
            return Err(Status::CONNECT_INVALID_PARAMETERS);
        }
        // IDs 1..=0xFFEF (FFF0h and up are reserved)
        let mut id = self.next_cntlid;
        for _ in 0..0xFFEF {
            id = id % 0xFFEF + 1;
            if !self.by_id.contains_key(&id) {
                self.next_cntlid = id;
                self.by_id.insert(
                    id,
                    ControllerState {
                        hostnqn: c.hostnqn.clone(),
                        kato_ms: c.kato_ms,
                        ..ControllerState::default()
                    },
                );
                return Ok(id);
            }
        }
        Err(Status::CONNECT_INVALID_PARAMETERS)
    }

    /// An I/O queue's Connect: the controller it joins must exist, belong
    /// to the same host, be enabled, and have granted the queue.
    pub fn connect_io(&self, sub: &Subsystem, c: &Connect) -> Result<(), Status> {
        let ctrl = self
            .by_id
            .get(&c.cntlid)
            .filter(|s| s.hostnqn == c.hostnqn && c.subnqn == sub.identity.subnqn)
            .ok_or(Status::CONNECT_INVALID_PARAMETERS)?;
        if !ctrl.ready() {
            return Err(Status::COMMAND_SEQUENCE_ERROR);
        }
        if c.qid > ctrl.io_queues {
            return Err(Status::INVALID_QUEUE_ID);
        }
        if c.queue_entries < 2 || c.queue_entries > u32::from(sub.identity.queue_entries) {
            return Err(Status::INVALID_QUEUE_SIZE);
        }
        Ok(())
    }

    pub fn get_mut(&mut self, cntlid: u16) -> Option<&mut ControllerState> {
        self.by_id.get_mut(&cntlid)
    }

    pub fn get(&self, cntlid: u16) -> Option<&ControllerState> {
        self.by_id.get(&cntlid)
    }

    /// The admin queue is gone: so is the controller.
    pub fn remove(&mut self, cntlid: u16) {
        self.by_id.remove(&cntlid);
    }
}

/// What an admin command completes with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminReply {
    Done {
        status: Status,
        result: u64,
        /// Data for the host (at most its buffer is sent).
        data: Vec<u8>,
    },
    /// An Asynchronous Event Request: completed when an event happens
    /// (never, here) or dropped with the connection.
    Hold,
}

impl AdminReply {
    fn ok(result: u64) -> AdminReply {
        AdminReply::Done {
            status: Status::SUCCESS,
            result,
            data: Vec::new(),
        }
    }

    fn data(data: Vec<u8>) -> AdminReply {
        AdminReply::Done {
            status: Status::SUCCESS,
            result: 0,
            data,
        }
    }

    fn fail(status: Status) -> AdminReply {
        AdminReply::Done {
            status,
            result: 0,
            data: Vec::new(),
        }
    }
}

/// An admin command (other than Connect) of controller `cntlid`.
pub fn admin(sub: &Subsystem, ctrl: &mut ControllerState, cntlid: u16, sqe: &Sqe) -> AdminReply {
    match sqe.opcode() {
        opcode::FABRICS => match sqe.fctype() {
            fctype::PROPERTY_GET => property_get(sub, ctrl, sqe),
            fctype::PROPERTY_SET => property_set(ctrl, sqe),
            _ => AdminReply::fail(Status::INVALID_FIELD),
        },
        // I/O queues and everything but Connect need an enabled controller
        _ if !ctrl.ready() => AdminReply::fail(Status::COMMAND_SEQUENCE_ERROR),
        opcode::IDENTIFY => identify(sub, cntlid, sqe),
        opcode::GET_LOG_PAGE => get_log_page(sqe),
        opcode::SET_FEATURES => set_features(ctrl, sqe),
        opcode::GET_FEATURES => get_features(ctrl, sqe),
        opcode::KEEP_ALIVE => AdminReply::ok(0),
        opcode::ASYNC_EVENT_REQUEST => AdminReply::Hold,
        // Abort: the command was not aborted (DW0 bit 0 set)
        opcode::ABORT => AdminReply::ok(1),
        _ => AdminReply::fail(Status::INVALID_OPCODE),
    }
}

fn property_get(sub: &Subsystem, ctrl: &ControllerState, sqe: &Sqe) -> AdminReply {
    let eight_bytes = sqe.dword(10) & 0x7 == 1;
    let value = match (sqe.dword(11), eight_bytes) {
        (property::CAP, true) => sub.cap(),
        (property::VS, false) => u64::from(identify::VERSION_1_4),
        (property::CC, false) => u64::from(ctrl.cc),
        (property::CSTS, false) => u64::from(ctrl.csts),
        _ => return AdminReply::fail(Status::INVALID_FIELD),
    };
    AdminReply::ok(value)
}

fn property_set(ctrl: &mut ControllerState, sqe: &Sqe) -> AdminReply {
    if sqe.dword(11) != property::CC || sqe.dword(10) & 0x7 != 0 {
        return AdminReply::fail(Status::INVALID_FIELD);
    }
    let cc = sqe.dword(12);
    ctrl.cc = cc;
    // enabling makes the controller ready at once; a shutdown completes
    // at once (nothing is cached outside the device)
    if cc & CC_EN != 0 {
        ctrl.csts |= CSTS_RDY;
    } else {
        ctrl.csts &= !CSTS_RDY;
    }
    if (cc >> CC_SHN_SHIFT) & 0b11 != 0 {
        ctrl.csts |= CSTS_SHST_COMPLETE;
    } else {
        ctrl.csts &= !CSTS_SHST_COMPLETE;
    }
    AdminReply::ok(0)
}

fn identify(sub: &Subsystem, cntlid: u16, sqe: &Sqe) -> AdminReply {
    let cns = sqe.dword(10) & 0xFF;
    let csi = (sqe.dword(11) >> 24) as u8;
    let nsid = sqe.nsid();
    let nn = sub.namespaces.len() as u32;
    let ns = || sub.namespace(nsid).ok_or(Status::INVALID_NAMESPACE);
    let page = match (cns, csi) {
        (0x00, _) => match ns() {
            Ok(ns) => Ok(identify::namespace(ns)),
            // an inactive NSID in range: a zeroed page
            Err(_) if (1..=nn).contains(&nsid) => Ok(vec![0; PAGE_BYTES]),
            Err(e) => Err(e),
        },
        (0x01, _) => Ok(identify::controller(&sub.identity, cntlid, nn)),
        (0x02, _) => Ok(identify::active_namespaces(&sub.namespaces, nsid, None)),
        (0x03, _) => ns().map(identify::ns_descriptors),
        (0x05, CSI_ZNS) => ns().and_then(|ns| {
            ns.zoned()
                .map(identify::zns_namespace)
                .ok_or(Status::INVALID_FIELD)
        }),
        // the NVM command set's own namespace page: nothing beyond CNS 00h
        (0x05, CSI_NVM) => ns().map(|_| vec![0; PAGE_BYTES]),
        (0x06, CSI_ZNS) => Ok(identify::zns_controller(sub.zasl)),
        (0x06, CSI_NVM) => Ok(identify::nvm_controller(sub.identity.mdts)),
        (0x07, CSI_NVM | CSI_ZNS) => Ok(identify::active_namespaces(
            &sub.namespaces,
            nsid,
            Some(csi),
        )),
        _ => Err(Status::INVALID_FIELD),
    };
    match page {
        Ok(p) => AdminReply::data(p),
        Err(s) => AdminReply::fail(s),
    }
}

fn get_log_page(sqe: &Sqe) -> AdminReply {
    let lid = (sqe.dword(10) & 0xFF) as u8;
    let dwords = (u64::from(sqe.dword(10) >> 16) | u64::from(sqe.dword(11) & 0xFFFF) << 16) + 1;
    let offset = u64::from(sqe.dword(12)) | u64::from(sqe.dword(13)) << 32;
    let csi = (sqe.dword(14) >> 24) as u8;
    let page = match (lid, csi) {
        (LID_COMMANDS_SUPPORTED_AND_EFFECTS, CSI_NVM | CSI_ZNS) => identify::effects_log(csi),
        _ => return AdminReply::fail(Status::INVALID_LOG_PAGE),
    };
    if offset % 4 != 0 || offset > page.len() as u64 {
        return AdminReply::fail(Status::INVALID_FIELD);
    }
    let start = offset as usize;
    let end = (offset.saturating_add(dwords * 4)).min(page.len() as u64) as usize;
    AdminReply::data(page[start..end].to_vec())
}

fn set_features(ctrl: &mut ControllerState, sqe: &Sqe) -> AdminReply {
    if sqe.dword(10) & (1 << 31) != 0 {
        return AdminReply::fail(Status::FEATURE_NOT_SAVEABLE);
    }
    let cdw11 = sqe.dword(11);
    match (sqe.dword(10) & 0xFF) as u8 {
        fid::NUMBER_OF_QUEUES => {
            let nsqr = (cdw11 & 0xFFFF) as u16;
            let ncqr = (cdw11 >> 16) as u16;
            if nsqr == 0xFFFF || ncqr == 0xFFFF {
                return AdminReply::fail(Status::INVALID_FIELD);
            }
            // (0's based both ways)
            let granted = nsqr.min(ncqr).min(MAX_IO_QUEUES - 1);
            ctrl.io_queues = granted + 1;
            AdminReply::ok(u64::from(granted) | u64::from(granted) << 16)
        }
        fid::ASYNC_EVENT_CONFIG => {
            ctrl.async_event_config = cdw11;
            AdminReply::ok(0)
        }
        fid::KEEP_ALIVE_TIMER => {
            ctrl.kato_ms = cdw11;
            AdminReply::ok(0)
        }
        // the write cache cannot be turned off
        fid::VOLATILE_WRITE_CACHE if cdw11 & 1 == 1 => AdminReply::ok(0),
        _ => AdminReply::fail(Status::INVALID_FIELD),
    }
}

fn get_features(ctrl: &ControllerState, sqe: &Sqe) -> AdminReply {
    let value = match (sqe.dword(10) & 0xFF) as u8 {
        fid::NUMBER_OF_QUEUES => {
            let n = u64::from(ctrl.io_queues.max(1) - 1);
            n | n << 16
        }
        fid::ASYNC_EVENT_CONFIG => u64::from(ctrl.async_event_config),
        fid::KEEP_ALIVE_TIMER => u64::from(ctrl.kato_ms),
        fid::VOLATILE_WRITE_CACHE => 1,
        _ => return AdminReply::fail(Status::INVALID_FIELD),
    };
    AdminReply::ok(value)
}
