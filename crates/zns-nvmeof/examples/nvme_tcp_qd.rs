//! QD1 and QD32 4 KiB random reads through the NVMe/TCP target on a
//! loopback socket (docs/nvme-tcp.md, "Throughput and overhead"): an
//! emulated ZN540 paced at real time, 64 MiB of zone 0 written first, then
//! reads at random 4 KiB offsets of it for a few seconds at each depth,
//! from the crate's own host on one I/O queue. Prints IOPS and the mean
//! latency; `zns bench` of the same job gives the device's own figures.
//!
//!   cargo run --release -p zns-nvmeof --example nvme_tcp_qd [SECONDS [ADDR NQN]]
//!
//! With ADDR and NQN it connects to a running `zns serve --nvme-tcp`
//! instead (namespace 1 a zoned ZN540, its zone 0 empty), so that the
//! target's own CPU time can be read from its process.

// OS-facing: a wall-clock measurement of sockets and threads
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Instant;

use zns_nvmeof::client::Controller;
use zns_nvmeof::command::{opcode, Sqe};
use zns_nvmeof::pdu::Digests;

#[path = "../tests/common/mod.rs"]
mod common;

const NQN: &str = "nqn.2026-11.org.znskit:bench";
const HOSTNQN: &str = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000b1";
const LBA_BYTES: usize = 4096;
const REGION_LBAS: u64 = 16384; // 64 MiB
const WRITE_LBAS: u64 = 32; // 128 KiB per prefill write

fn rw(op: u8, slba: u64, nlb: u64) -> Sqe {
    let mut s = Sqe::new(op, 0);
    s.set_nsid(1)
        .set_qword10(slba)
        .set_dword(12, (nlb - 1) as u32);
    s
}

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5.0);
    let args: Vec<String> = std::env::args().collect();
    let served;
    let (addr, nqn) = match (args.get(2), args.get(3)) {
        (Some(a), Some(n)) => (a.parse().expect("ADDR:PORT"), n.clone()),
        _ => {
            served = common::serve("zn540", &[("namespace.0.zone_count", "16")], 1.0, NQN);
            (served.server.local_addr(), NQN.to_string())
        }
    };
    let mut c =
        Controller::connect(addr, &nqn, HOSTNQN, Digests::default(), 1, 0).expect("connect");
    let q = &mut c.io[0];
    let data = vec![0x5Au8; WRITE_LBAS as usize * LBA_BYTES];
    for i in 0..REGION_LBAS / WRITE_LBAS {
        let (cqe, _) = q
            .execute(rw(opcode::WRITE, i * WRITE_LBAS, WRITE_LBAS), &data, 0)
            .expect("write");
        assert!(cqe.status.is_success(), "prefill: {}", cqe.status);
    }
    // xorshift64*: the same offsets every run
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next_lba = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D) % REGION_LBAS
    };
    for depth in [1usize, 32] {
        let start = Instant::now();
        let mut done = 0u64;
        for _ in 0..depth {
            q.send(rw(opcode::READ, next_lba(), 1), &[], LBA_BYTES)
                .expect("send");
        }
        while start.elapsed().as_secs_f64() < seconds {
            let (cqe, _) = q.recv().expect("recv");
            assert!(cqe.status.is_success(), "read: {}", cqe.status);
            done += 1;
            q.send(rw(opcode::READ, next_lba(), 1), &[], LBA_BYTES)
                .expect("send");
        }
        for _ in 0..depth {
            q.recv().expect("drain");
        }
        let elapsed = start.elapsed().as_secs_f64();
        let iops = done as f64 / elapsed;
        println!(
            "QD{depth}: {done} reads of 4 KiB in {elapsed:.2} s: {iops:.0} IOPS, mean latency {:.1} us",
            depth as f64 / iops * 1e6
        );
    }
}
