//! The NVMe/TCP target end to end in process: an emulated ZN540 (ZRWA
//! included) and its conventional twin on zns-serve's paced runtime,
//! served on a loopback socket, driven by the crate's own host
//! (`zns_nvmeof::Client`): the Linux host's handshake (ICReq, Connect,
//! Property Get/Set, the Identify pages and the effects log it reads),
//! I/O with in-capsule data, R2T/H2CData and C2HData, every zone action
//! with ZRWA, the device's own statuses, digests, and wire errors that
//! close one connection while the target keeps serving.

use std::net::SocketAddr;

use zns_core::{NvmeStatus, ZoneState};
use zns_nvmeof::client::Controller;
use zns_nvmeof::command::{opcode, Sqe, Status};
use zns_nvmeof::controller::property;
use zns_nvmeof::pdu::Digests;
use zns_nvmeof::Client;

const NQN: &str = "nqn.2026-11.org.znskit:test-zn540";
const HOSTNQN: &str = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001";
/// The ZN540's zones: 2 GiB (524288 LBAs of 4 KiB), 1077 MiB capacity.
const ZONE_LBAS: u64 = 524288;
const ZONES: u64 = 4;

mod common;

/// zn540-cns with 4 zones: namespace 1 conventional, namespace 2 zoned.
fn start() -> common::Served {
    let zones = ZONES.to_string();
    common::serve("zn540-cns", &[("namespace.1.zone_count", &zones)], 1.0, NQN)
}

fn ok(s: Status) {
    assert!(s.is_success(), "status {s}");
}

/// An admin queue connected and enabled, and `io_queues` I/O queues.
fn controller(addr: SocketAddr, digests: Digests, io_queues: u16) -> (Client, Vec<Client>, u16) {
    let c = Controller::connect(addr, NQN, HOSTNQN, digests, io_queues, 5000).unwrap();
    (c.admin, c.io, c.cntlid)
}

fn identify(admin: &mut Client, cns: u32, csi: u32, nsid: u32) -> (Status, Vec<u8>) {
    let mut s = Sqe::new(opcode::IDENTIFY, 0);
    s.set_nsid(nsid).set_dword(10, cns).set_dword(11, csi << 24);
    let (cqe, data) = admin.execute(s, &[], 4096).unwrap();
    (cqe.status, data)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

#[test]
fn the_linux_host_handshake_and_identify_pages() {
    let t = start();
    let addr = t.server.local_addr();
    let mut admin = Client::connect(addr, Digests::default()).unwrap();
    // before Connect: a command sequence error, not a wire error
    let (cqe, _) = admin
        .execute(Sqe::new(opcode::KEEP_ALIVE, 0), &[], 0)
        .unwrap();
    assert_eq!(cqe.status, Status::COMMAND_SEQUENCE_ERROR);
    // a wrong subsystem NQN is refused
    let bad = admin
        .fabrics_connect("nqn.no-such", HOSTNQN, 0, 0xFFFF, 32, 0)
        .unwrap();
    assert_eq!(bad.status, Status::CONNECT_INVALID_PARAMETERS);
    let c = admin
        .fabrics_connect(NQN, HOSTNQN, 0, 0xFFFF, 32, 5000)
        .unwrap();
    ok(c.status);
    let cntlid = c.result as u16;
    let (s, cap) = admin.property(property::CAP, true).unwrap();
    ok(s);
    assert_eq!(cap & 0xFFFF, 127, "MQES");
    assert_ne!(
        cap & 1 << 43,
        0,
        "CAP.CSS: I/O command sets (the host sets CC.CSS = CSI)"
    );
    // Identify before CC.EN: a command sequence error
    assert_eq!(
        identify(&mut admin, 1, 0, 0).0,
        Status::COMMAND_SEQUENCE_ERROR
    );
    ok(admin.enable().unwrap());
    assert_eq!(
        admin.property(property::CSTS, false).unwrap().1 & 1,
        1,
        "CSTS.RDY"
    );
    let (s, id) = identify(&mut admin, 1, 0, 0);
    ok(s);
    assert_eq!(
        u16::from_le_bytes([id[78], id[79]]),
        cntlid,
        "CNTLID as Connect said"
    );
    assert_eq!(id[77], 7, "MDTS: the ZN540's 512 KiB");
    assert_eq!(u32_at(&id, 516), 2, "NN");
    assert!(id[768..768 + NQN.len()] == *NQN.as_bytes());
    let (_, list) = identify(&mut admin, 2, 0, 0);
    assert_eq!(
        (u32_at(&list, 0), u32_at(&list, 4), u32_at(&list, 8)),
        (1, 2, 0)
    );
    // the descriptors carry each namespace's command set
    let (_, d1) = identify(&mut admin, 3, 0, 1);
    let (_, d2) = identify(&mut admin, 3, 0, 2);
    assert_eq!((d1[20], d1[24]), (0x04, 0x00), "namespace 1: NVM");
    assert_eq!((d2[20], d2[24]), (0x04, 0x02), "namespace 2: ZNS");
    // ZNS Identify Namespace: zone size, limits, ZRWA
    let (s, zns) = identify(&mut admin, 5, 2, 2);
    ok(s);
    assert_eq!(u64_at(&zns, 2816), ZONE_LBAS, "ZSZE");
    assert_eq!(u16::from_le_bytes([zns[2], zns[3]]) & 2, 2, "OZCS.ZRWASUP");
    assert_eq!(u32_at(&zns, 8), 13, "MOR: 14 open zones, 0's based");
    assert_ne!(u16::from_le_bytes([zns[50], zns[51]]), 0, "ZRWASZ");
    assert_eq!(zns[52] & 1, 1, "ZRWACAP: explicit flush");
    // the conventional namespace has no ZNS page
    assert_eq!(identify(&mut admin, 5, 2, 1).0, Status::INVALID_FIELD);
    assert_eq!(identify(&mut admin, 0, 0, 9).0, Status::INVALID_NAMESPACE);
    let (_, ns) = identify(&mut admin, 0, 0, 2);
    assert_eq!(u64_at(&ns, 0), ZONES * ZONE_LBAS, "NSZE");
    assert_eq!((u32_at(&ns, 128) >> 16) & 0xFF, 12, "LBADS: 4 KiB");
    // Commands Supported and Effects, CSI ZNS: Zone Append supported
    let mut log = Sqe::new(opcode::GET_LOG_PAGE, 0);
    log.set_dword(10, 0x05 | (1023 << 16))
        .set_dword(14, 2 << 24);
    let (cqe, effects) = admin.execute(log, &[], 4096).unwrap();
    ok(cqe.status);
    assert_eq!(u32_at(&effects, 1024 + 0x7D * 4) & 1, 1);
    // an AER is held: the keep alive behind it completes first
    let aer = admin
        .send(Sqe::new(opcode::ASYNC_EVENT_REQUEST, 0), &[], 0)
        .unwrap();
    let ka = admin.send(Sqe::new(opcode::KEEP_ALIVE, 0), &[], 0).unwrap();
    let (cqe, _) = admin.recv().unwrap();
    assert_eq!(cqe.cid, ka);
    assert_ne!(cqe.cid, aer);
    ok(cqe.status);
    // an I/O queue of a controller that does not exist is refused
    let mut q = Client::connect(addr, Digests::default()).unwrap();
    let c = q
        .fabrics_connect(NQN, HOSTNQN, 1, cntlid.wrapping_add(5), 128, 0)
        .unwrap();
    assert_eq!(c.status, Status::CONNECT_INVALID_PARAMETERS);
    // ... and one beyond the queues granted (none asked for yet)
    let c = q.fabrics_connect(NQN, HOSTNQN, 1, cntlid, 128, 0).unwrap();
    assert_eq!(c.status, Status::INVALID_QUEUE_ID);
}

fn rw(op: u8, nsid: u32, slba: u64, nlb: u64) -> Sqe {
    let mut s = Sqe::new(op, 0);
    s.set_nsid(nsid)
        .set_qword10(slba)
        .set_dword(12, (nlb - 1) as u32);
    s
}

fn zone_send(zslba: u64, zsa: u32, zsaso: bool) -> Sqe {
    let mut s = Sqe::new(opcode::ZONE_MGMT_SEND, 0);
    s.set_nsid(2)
        .set_qword10(zslba)
        .set_dword(13, zsa | u32::from(zsaso) << 9);
    s
}

/// Zone `z`'s (state, write pointer, attributes) from a partial report.
fn zone(q: &mut Client, z: u64) -> (u8, u64, u8) {
    let mut s = Sqe::new(opcode::ZONE_MGMT_RECV, 0);
    s.set_nsid(2)
        .set_qword10(z * ZONE_LBAS)
        .set_dword(12, (128 / 4) - 1)
        .set_dword(13, 1 << 16);
    let (cqe, data) = q.execute(s, &[], 128).unwrap();
    ok(cqe.status);
    assert_eq!(u64_at(&data, 0), 1, "a partial report of one zone");
    assert_eq!(u64_at(&data, 64 + 16), z * ZONE_LBAS, "ZSLBA");
    (data[65] >> 4, u64_at(&data, 64 + 24), data[66])
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

#[test]
fn io_zone_actions_zrwa_and_the_devices_own_statuses() {
    let t = start();
    let (_admin, mut ios, _) = controller(t.server.local_addr(), Digests::default(), 2);
    let q = &mut ios[0];
    // a 4 KiB write in the capsule, a 256 KiB one through R2T/H2CData
    let small = pattern(4096, 1);
    ok(q.execute(rw(opcode::WRITE, 2, 0, 1), &small, 0)
        .unwrap()
        .0
        .status);
    let big = pattern(256 * 1024, 2);
    ok(q.execute(rw(opcode::WRITE, 2, 1, 64), &big, 0)
        .unwrap()
        .0
        .status);
    let (cqe, back) = q
        .execute(rw(opcode::READ, 2, 0, 65), &[], 65 * 4096)
        .unwrap();
    ok(cqe.status);
    assert_eq!(&back[..4096], &small[..]);
    assert_eq!(&back[4096..], &big[..]);
    assert_eq!(zone(q, 0), (ZoneState::ImplicitlyOpened.code(), 65, 0));
    // a write off the write pointer: the emulated controller's Zone
    // Invalid Write
    let (cqe, _) = q.execute(rw(opcode::WRITE, 2, 100, 1), &small, 0).unwrap();
    assert_eq!(cqe.status, Status::from(NvmeStatus::ZoneInvalidWrite));
    // zone append: the LBA in the completion
    let (cqe, _) = q
        .execute(
            rw(opcode::ZONE_APPEND, 2, ZONE_LBAS, 2),
            &pattern(8192, 3),
            0,
        )
        .unwrap();
    ok(cqe.status);
    assert_eq!(cqe.result, ZONE_LBAS);
    let (cqe, _) = q
        .execute(rw(opcode::ZONE_APPEND, 2, ZONE_LBAS, 1), &small, 0)
        .unwrap();
    assert_eq!(cqe.result, ZONE_LBAS + 2);
    // ... not at a zone start: Invalid Field, as the device says
    let (cqe, _) = q
        .execute(rw(opcode::ZONE_APPEND, 2, ZONE_LBAS + 1, 1), &small, 0)
        .unwrap();
    assert!(!cqe.status.is_success());
    // open with ZRWA: writes anywhere in the window, then an explicit flush
    let z2 = 2 * ZONE_LBAS;
    ok(q.execute(zone_send(z2, 0x03, true), &[], 0)
        .unwrap()
        .0
        .status);
    let (state, wp, attrs) = zone(q, 2);
    assert_eq!((state, wp), (ZoneState::ExplicitlyOpened.code(), z2));
    assert_eq!(attrs & 1 << 3, 1 << 3, "ZRWAV");
    ok(
        q.execute(rw(opcode::WRITE, 2, z2 + 8, 8), &pattern(32768, 4), 0)
            .unwrap()
            .0
            .status,
    );
    ok(
        q.execute(rw(opcode::WRITE, 2, z2, 8), &pattern(32768, 5), 0)
            .unwrap()
            .0
            .status,
    );
    ok(
        q.execute(rw(opcode::WRITE, 2, z2 + 2, 2), &pattern(8192, 6), 0)
            .unwrap()
            .0
            .status,
    );
    assert_eq!(zone(q, 2).1, z2, "ZRWA writes leave the WP until a flush");
    ok(q.execute(zone_send(z2 + 15, 0x11, false), &[], 0)
        .unwrap()
        .0
        .status);
    assert_eq!(
        zone(q, 2).1,
        z2 + 16,
        "the explicit flush commits through LBA 15"
    );
    let (_, back) = q
        .execute(rw(opcode::READ, 2, z2, 4), &[], 4 * 4096)
        .unwrap();
    assert_eq!(
        &back[8192..16384],
        &pattern(8192, 6)[..],
        "the rewrite in the ZRWA won"
    );
    // close, finish, reset; the state machine's refusals are its own
    ok(q.execute(zone_send(z2, 0x01, false), &[], 0)
        .unwrap()
        .0
        .status);
    assert_eq!(zone(q, 2).0, ZoneState::Closed.code());
    ok(q.execute(zone_send(z2, 0x02, false), &[], 0)
        .unwrap()
        .0
        .status);
    assert_eq!(zone(q, 2).0, ZoneState::Full.code());
    let (cqe, _) = q
        .execute(rw(opcode::WRITE, 2, z2 + 16, 1), &small, 0)
        .unwrap();
    assert_eq!(cqe.status, Status::from(NvmeStatus::ZoneIsFull));
    ok(q.execute(zone_send(z2, 0x04, false), &[], 0)
        .unwrap()
        .0
        .status);
    assert_eq!(zone(q, 2), (ZoneState::Empty.code(), z2, 0));
    // a full report (not partial) counts every zone
    let mut s = Sqe::new(opcode::ZONE_MGMT_RECV, 0);
    s.set_nsid(2).set_dword(12, (4096 / 4) - 1);
    let (cqe, rep) = q.execute(s, &[], 4096).unwrap();
    ok(cqe.status);
    assert_eq!(u64_at(&rep, 0), ZONES);
    // flush; write zeroes; the conventional namespace: reads and writes
    // anywhere, no zone commands
    ok(q.execute(rw(opcode::FLUSH, 2, 0, 1), &[], 0)
        .unwrap()
        .0
        .status);
    ok(
        q.execute(rw(opcode::WRITE, 1, 1000, 2), &pattern(8192, 7), 0)
            .unwrap()
            .0
            .status,
    );
    ok(q.execute(rw(opcode::WRITE_ZEROES, 1, 1000, 1), &[], 0)
        .unwrap()
        .0
        .status);
    let (_, back) = q.execute(rw(opcode::READ, 1, 1000, 2), &[], 8192).unwrap();
    assert!(back[..4096].iter().all(|&b| b == 0));
    assert_eq!(&back[4096..], &pattern(8192, 7)[4096..]);
    let mut reset_conventional = zone_send(0, 0x04, false);
    reset_conventional.set_nsid(1);
    let (cqe, _) = q.execute(reset_conventional, &[], 0).unwrap();
    assert_eq!(cqe.status, Status::INVALID_OPCODE);
    let (cqe, _) = q.execute(rw(opcode::READ, 3, 0, 1), &[], 4096).unwrap();
    assert_eq!(cqe.status, Status::INVALID_NAMESPACE);
    // beyond MDTS: Invalid Field
    let (cqe, _) = q
        .execute(rw(opcode::READ, 2, 0, 256), &[], 256 * 4096)
        .unwrap();
    assert_eq!(cqe.status, Status::INVALID_FIELD);
    // the second queue sees the same device, several commands in flight
    let q2 = &mut ios[1];
    let cids: Vec<u16> = (0..8)
        .map(|i| q2.send(rw(opcode::READ, 2, i, 1), &[], 4096).unwrap())
        .collect();
    let mut done: Vec<u16> = (0..8).map(|_| q2.recv().unwrap().0.cid).collect();
    done.sort_unstable();
    assert_eq!(done, cids);
}

#[test]
fn digests_cover_headers_and_data() {
    let t = start();
    let both = Digests {
        header: true,
        data: true,
    };
    let (_admin, mut ios, _) = controller(t.server.local_addr(), both, 1);
    let q = &mut ios[0];
    let data = pattern(64 * 1024, 9);
    ok(q.execute(rw(opcode::WRITE, 2, 0, 16), &data, 0)
        .unwrap()
        .0
        .status);
    let (cqe, back) = q
        .execute(rw(opcode::READ, 2, 0, 16), &[], 64 * 1024)
        .unwrap();
    ok(cqe.status);
    assert_eq!(back, data);
}

#[test]
fn wire_errors_close_one_connection_and_the_target_keeps_serving() {
    let t = start();
    let addr = t.server.local_addr();
    let (_admin, mut ios, _) = controller(addr, Digests::default(), 1);
    // an unknown PDU type: a termination request, then the end
    let mut bad = Client::connect(addr, Digests::default()).unwrap();
    bad.send_raw(&[0x0E, 0, 24, 0, 24, 0, 0, 0]).unwrap();
    bad.send_raw(&[0; 16]).unwrap();
    let end = bad.read_pdu();
    assert!(
        matches!(end, Ok(zns_nvmeof::pdu::Pdu::C2HTermReq(_))),
        "{end:?}"
    );
    assert!(
        bad.read_pdu().is_err(),
        "closed after the termination request"
    );
    // an oversized PDU; a host that vanishes in the middle of one
    let mut big = Client::connect(addr, Digests::default()).unwrap();
    let mut h = vec![0x04, 0, 72, 72];
    h.extend_from_slice(&(64u32 << 20).to_le_bytes());
    big.send_raw(&h).unwrap();
    assert!(matches!(
        big.read_pdu(),
        Ok(zns_nvmeof::pdu::Pdu::C2HTermReq(_))
    ));
    let mut gone = Client::connect(addr, Digests::default()).unwrap();
    gone.send_raw(&[0x04, 0, 72, 72, 200, 0, 0, 0, 1, 2, 3])
        .unwrap();
    drop(gone);
    // no ICReq first
    let mut raw = std::net::TcpStream::connect(addr).unwrap();
    std::io::Write::write_all(&mut raw, &[0x04, 0, 72, 0, 72, 0, 0, 0]).unwrap();
    drop(raw);
    // H2CData nobody asked for
    let mut stray = Client::connect(addr, Digests::default()).unwrap();
    let mut d = Vec::new();
    zns_nvmeof::pdu::Pdu::H2CData(zns_nvmeof::pdu::DataPdu {
        cccid: 1,
        ttag: 77,
        offset: 0,
        last: true,
        success: false,
        data: vec![0; 512],
    })
    .encode(Digests::default(), &mut d);
    stray.send_raw(&d).unwrap();
    assert!(matches!(
        stray.read_pdu(),
        Ok(zns_nvmeof::pdu::Pdu::C2HTermReq(_))
    ));
    // the established queue still works, and new hosts connect
    let q = &mut ios[0];
    ok(q.execute(rw(opcode::WRITE, 2, 0, 1), &pattern(4096, 1), 0)
        .unwrap()
        .0
        .status);
    let (_a2, mut ios2, _) = controller(addr, Digests::default(), 1);
    let (cqe, back) = ios2[0]
        .execute(rw(opcode::READ, 2, 0, 1), &[], 4096)
        .unwrap();
    ok(cqe.status);
    assert_eq!(back, pattern(4096, 1));
}

#[test]
fn a_raid_array_is_one_zoned_namespace() {
    let nqn = "nqn.2026-11.org.znskit:test-raid";
    let t = common::serve("raid:5xtiny,chunk=32k", &[], 1.0, nqn);
    let c = Controller::connect(
        t.server.local_addr(),
        nqn,
        HOSTNQN,
        Digests::default(),
        1,
        0,
    )
    .unwrap();
    let (mut admin, mut ios) = (c.admin, c.io);
    let (_, list) = identify(&mut admin, 2, 0, 0);
    assert_eq!(
        (u32_at(&list, 0), u32_at(&list, 4)),
        (1, 0),
        "one namespace"
    );
    let (_, d) = identify(&mut admin, 3, 0, 1);
    assert_eq!(d[24], 0x02, "zoned (CSI ZNS)");
    let (s, zns) = identify(&mut admin, 5, 2, 1);
    ok(s);
    let zone_lbas = u64_at(&zns, 2816);
    assert!(zone_lbas.is_power_of_two(), "ZSZE {zone_lbas}");
    let q = &mut ios[0];
    let mut s = rw(opcode::WRITE, 0, 0, 4);
    s.set_nsid(1);
    ok(q.execute(s, &pattern(16384, 1), 0).unwrap().0.status);
    let mut a = rw(opcode::ZONE_APPEND, 0, zone_lbas, 2);
    a.set_nsid(1);
    let (cqe, _) = q.execute(a, &pattern(8192, 2), 0).unwrap();
    ok(cqe.status);
    assert_eq!(cqe.result, zone_lbas, "the append's LBA");
    let mut r = rw(opcode::READ, 0, 0, 4);
    r.set_nsid(1);
    let (cqe, back) = q.execute(r, &[], 16384).unwrap();
    ok(cqe.status);
    assert_eq!(back, pattern(16384, 1));
}
