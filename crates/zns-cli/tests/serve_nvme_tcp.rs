//! `zns serve --nvme-tcp` end to end as a user runs it: the binary started
//! on an ephemeral port (`127.0.0.1:0`, the port it binds printed in
//! `--json`), reached with zns-nvmeof's own host (a Linux host's handshake:
//! Connect, CC.EN, Identify), a write, a read back, an append with its LBA
//! and a zone report over the wire, then SIGTERM: exit 0, the closing
//! message, and `--stats` counting the commands by kind.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use zns_nvmeof::client::Controller;
use zns_nvmeof::command::{opcode, Sqe, Status};
use zns_nvmeof::pdu::Digests;

const HOSTNQN: &str = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000002";
/// The ZN540's zones: 524288 LBAs of 4 KiB.
const ZONE_LBAS: u64 = 524288;

/// Kills the server if a test fails before its SIGTERM.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn ok(s: Status) {
    assert!(s.is_success(), "status {s}");
}

fn rw(op: u8, slba: u64, nlb: u64) -> Sqe {
    let mut s = Sqe::new(op, 0);
    s.set_nsid(1)
        .set_qword10(slba)
        .set_dword(12, (nlb - 1) as u32);
    s
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

#[test]
fn serve_nvme_tcp_on_an_ephemeral_port_answers_a_host_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.json");
    let child = Command::new(env!("CARGO_BIN_EXE_zns"))
        .args([
            "serve",
            "--nvme-tcp",
            "127.0.0.1:0",
            "zn540",
            "--zones",
            "4",
        ])
        .args(["--json", "--stats"])
        .arg(&stats)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run zns serve");
    let mut server = Server(child);
    // the first stdout line: the subsystems and the address bound
    let mut line = String::new();
    BufReader::new(server.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&line).expect(&line);
    let addr: SocketAddr = doc["nvme_tcp"]["address"]
        .as_str()
        .expect("the address")
        .parse()
        .unwrap();
    assert_ne!(addr.port(), 0, "the port bound, not the one asked for");
    let subsystem = &doc["nvme_tcp"]["subsystems"][0];
    let nqn = subsystem["nqn"].as_str().expect("the NQN").to_string();
    assert_eq!(nqn, "nqn.2026-11.org.znskit:zn540");
    assert_eq!(subsystem["namespaces"][0]["zoned"], true);
    assert_eq!(subsystem["namespaces"][0]["zrwa"], true);

    let c = Controller::connect(addr, &nqn, HOSTNQN, Digests::default(), 1, 5000).unwrap();
    let (mut admin, mut io) = (c.admin, c.io);
    // Identify Controller: the model names the emulated drive
    let mut id = Sqe::new(opcode::IDENTIFY, 0);
    id.set_dword(10, 1);
    let (cqe, page) = admin.execute(id, &[], 4096).unwrap();
    ok(cqe.status);
    let model = String::from_utf8_lossy(&page[24..64]).trim().to_string();
    assert_eq!(model, "znskit zn540");
    // Identify Namespace 1: 4 zones of 2 GiB in 4 KiB LBAs
    let mut id = Sqe::new(opcode::IDENTIFY, 0);
    id.set_nsid(1).set_dword(10, 0);
    let (cqe, page) = admin.execute(id, &[], 4096).unwrap();
    ok(cqe.status);
    assert_eq!(u64_at(&page, 0), 4 * ZONE_LBAS, "NSZE");

    let q = &mut io[0];
    // a 4 KiB write (in the capsule) and a 64 KiB one (R2T/H2CData)
    let data: Vec<u8> = (0..17 * 4096).map(|i| (i % 251) as u8).collect();
    ok(q.execute(rw(opcode::WRITE, 0, 1), &data[..4096], 0)
        .unwrap()
        .0
        .status);
    ok(q.execute(rw(opcode::WRITE, 1, 16), &data[4096..], 0)
        .unwrap()
        .0
        .status);
    let (cqe, back) = q.execute(rw(opcode::READ, 0, 17), &[], data.len()).unwrap();
    ok(cqe.status);
    assert_eq!(back, data, "the data reads back");
    // zone append into zone 1: its LBA in the completion
    let (cqe, _) = q
        .execute(rw(opcode::ZONE_APPEND, ZONE_LBAS, 1), &data[..4096], 0)
        .unwrap();
    ok(cqe.status);
    assert_eq!(cqe.result, ZONE_LBAS);
    // a report of every zone: zone 0's WP at 17, zone 1's at 1
    let mut rep = Sqe::new(opcode::ZONE_MGMT_RECV, 0);
    rep.set_nsid(1).set_dword(12, (64 + 4 * 64) / 4 - 1);
    let (cqe, report) = q.execute(rep, &[], 64 + 4 * 64).unwrap();
    ok(cqe.status);
    assert_eq!(u64_at(&report, 0), 4, "zones reported");
    assert_eq!(u64_at(&report, 64 + 24), 17, "zone 0's write pointer");
    assert_eq!(u64_at(&report, 128 + 24), ZONE_LBAS + 1, "zone 1's WP");
    // a write off the write pointer: the controller's Zone Invalid Write
    let (cqe, _) = q
        .execute(rw(opcode::WRITE, 100, 1), &data[..4096], 0)
        .unwrap();
    assert_eq!(cqe.status.sct, 1);
    assert_eq!(cqe.status.sc, 0xBC, "Zone Invalid Write");
    drop((admin, io));

    // SIGTERM: exit 0, the target closed, the stats written
    // SAFETY: kill(2) on our own child's pid.
    let rc = unsafe { libc::kill(server.0.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let status = server.0.wait().unwrap();
    let mut err = String::new();
    server
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(
        err.contains("SIGTERM: closing the NVMe/TCP target"),
        "{err}"
    );
    assert!(err.contains("served"), "{err}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let kinds = &s["served"][0]["requests"]["by_kind"];
    assert_eq!(kinds["write"]["requests"], 3, "{kinds}");
    assert_eq!(kinds["write"]["failed"], 1, "{kinds}");
    assert_eq!(kinds["write"]["bytes"], 17 * 4096, "{kinds}");
    assert_eq!(kinds["read"]["requests"], 1, "{kinds}");
    assert_eq!(kinds["read"]["bytes"], 17 * 4096, "{kinds}");
    assert_eq!(kinds["zone-append"]["requests"], 1, "{kinds}");
    assert_eq!(kinds["report-zones"]["requests"], 1, "{kinds}");
    assert_eq!(s["served"][0]["path"], format!("{nqn} nsid 1"));
}
