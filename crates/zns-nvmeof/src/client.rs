//! A minimal NVMe/TCP host: ICReq, Fabrics Connect and Property Set, and
//! commands with in-capsule data, R2T/H2CData for larger writes and
//! C2HData for reads, several in flight. For the crate's tests and the
//! benchmark (the real hosts are Linux's nvme-tcp and nvme-cli, in the
//! guest tests); it checks what it receives as strictly as the target.

// OS-facing: a socket client in real time
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};

use crate::command::{fctype, opcode, sgl, Cqe, SglDesc, Sqe, Status};
use crate::controller::{property, CONNECT_DATA_BYTES};
use crate::identify::IN_CAPSULE_DATA_BYTES;
use crate::pdu::{self, CapsuleCmd, DataPdu, Digests, IcReq, Limits, Parsed, Pdu};

/// One queue's connection.
pub struct Client {
    stream: TcpStream,
    digests: Digests,
    buf: Vec<u8>,
    next_cid: u16,
    maxh2cdata: u32,
    /// Data of writes waiting for an R2T, by CID.
    to_send: HashMap<u16, Vec<u8>>,
    /// Data received for reads, by CID.
    received: HashMap<u16, Vec<u8>>,
}

fn protocol(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

impl Client {
    /// Opens a TCP connection and exchanges ICReq/ICResp.
    pub fn connect(addr: SocketAddr, digests: Digests) -> io::Result<Client> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        let mut c = Client {
            stream,
            digests: Digests::default(),
            buf: Vec::new(),
            next_cid: 1,
            maxh2cdata: 0,
            to_send: HashMap::new(),
            received: HashMap::new(),
        };
        c.send_pdu(&Pdu::IcReq(IcReq {
            pfv: 0,
            hpda: 0,
            digests,
            maxr2t: 0,
        }))?;
        match c.read_pdu()? {
            Pdu::IcResp(r) if r.digests == digests && r.pfv == 0 && r.cpda == 0 => {
                c.maxh2cdata = r.maxh2cdata;
                c.digests = digests;
                Ok(c)
            }
            other => Err(protocol(format!("expected an ICResp, got {other:?}"))),
        }
    }

    /// Sends raw bytes (for tests of malformed streams).
    pub fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    fn send_pdu(&mut self, p: &Pdu) -> io::Result<()> {
        let mut bytes = Vec::new();
        p.encode(self.digests, &mut bytes);
        self.stream.write_all(&bytes)
    }

    /// The next PDU from the controller.
    pub fn read_pdu(&mut self) -> io::Result<Pdu> {
        let limits = Limits {
            digests: self.digests,
            max_pdu_bytes: 64 << 20,
        };
        loop {
            match pdu::parse(&self.buf, &limits).map_err(|e| protocol(e.to_string()))? {
                Parsed::Pdu(p, used) => {
                    self.buf.drain(..used);
                    return Ok(p);
                }
                Parsed::NeedMore(n) => {
                    let have = self.buf.len();
                    self.buf.resize(n.max(have + 4096), 0);
                    let got = self.stream.read(&mut self.buf[have..])?;
                    self.buf.truncate(have + got);
                    if got == 0 {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the controller closed the connection",
                        ));
                    }
                }
            }
        }
    }

    fn cid(&mut self) -> u16 {
        let cid = self.next_cid;
        self.next_cid = self.next_cid.wrapping_add(1);
        cid
    }

    /// Sends `sqe` (its CID and data pointer filled in here) with `data`
    /// for the controller (in the capsule up to 8 KiB, else after an R2T)
    /// and room for `data_in_bytes` back; returns the CID.
    pub fn send(&mut self, mut sqe: Sqe, data: &[u8], data_in_bytes: usize) -> io::Result<u16> {
        let cid = self.cid();
        sqe.0[2..4].copy_from_slice(&cid.to_le_bytes());
        let in_capsule = !data.is_empty() && data.len() <= IN_CAPSULE_DATA_BYTES as usize;
        sqe.set_sgl(SglDesc {
            address: 0,
            length: data.len().max(data_in_bytes) as u32,
            id: if in_capsule {
                sgl::IN_CAPSULE
            } else {
                sgl::TRANSPORT
            },
        });
        if !data.is_empty() && !in_capsule {
            self.to_send.insert(cid, data.to_vec());
        }
        let data = if in_capsule {
            data.to_vec()
        } else {
            Vec::new()
        };
        self.send_pdu(&Pdu::CapsuleCmd(CapsuleCmd { sqe: sqe.0, data }))?;
        Ok(cid)
    }

    /// Waits for the next completion: its CQE and the data that came with
    /// it (answering R2Ts on the way).
    pub fn recv(&mut self) -> io::Result<(Cqe, Vec<u8>)> {
        loop {
            match self.read_pdu()? {
                Pdu::R2t(r) => {
                    let data = self.to_send.remove(&r.cccid).ok_or_else(|| {
                        protocol(format!("R2T for command {} with no data", r.cccid))
                    })?;
                    let end = (r.offset as usize).saturating_add(r.length as usize);
                    if end > data.len() {
                        return Err(protocol("R2T beyond the command's data"));
                    }
                    let chunk = (self.maxh2cdata as usize).max(4096);
                    let mut at = r.offset as usize;
                    while at < end {
                        let n = chunk.min(end - at);
                        self.send_pdu(&Pdu::H2CData(DataPdu {
                            cccid: r.cccid,
                            ttag: r.ttag,
                            offset: at as u32,
                            last: at + n == end,
                            success: false,
                            data: data[at..at + n].to_vec(),
                        }))?;
                        at += n;
                    }
                }
                Pdu::C2HData(d) => {
                    let buf = self.received.entry(d.cccid).or_default();
                    if d.offset as usize != buf.len() {
                        return Err(protocol("C2HData out of order"));
                    }
                    buf.extend_from_slice(&d.data);
                }
                Pdu::CapsuleResp(c) => {
                    let cqe = Cqe::decode(&c);
                    let data = self.received.remove(&cqe.cid).unwrap_or_default();
                    return Ok((cqe, data));
                }
                Pdu::C2HTermReq(t) => {
                    return Err(protocol(format!(
                        "the controller ended the connection: FES {:#x}",
                        t.fes
                    )))
                }
                other => return Err(protocol(format!("unexpected PDU {other:?}"))),
            }
        }
    }

    /// One command, waited for.
    pub fn execute(
        &mut self,
        sqe: Sqe,
        data: &[u8],
        data_in_bytes: usize,
    ) -> io::Result<(Cqe, Vec<u8>)> {
        let cid = self.send(sqe, data, data_in_bytes)?;
        let (cqe, data) = self.recv()?;
        if cqe.cid != cid {
            return Err(protocol(format!(
                "completion for {}, expected {cid}",
                cqe.cid
            )));
        }
        Ok((cqe, data))
    }

    /// Fabrics Connect of queue `qid` (`cntlid` 0xFFFF for the admin
    /// queue): the completion (DW0: the controller ID).
    pub fn fabrics_connect(
        &mut self,
        subnqn: &str,
        hostnqn: &str,
        qid: u16,
        cntlid: u16,
        queue_entries: u16,
        kato_ms: u32,
    ) -> io::Result<Cqe> {
        let mut sqe = Sqe::new(opcode::FABRICS, 0);
        sqe.0[4] = fctype::CONNECT;
        sqe.set_dword(10, u32::from(qid) << 16)
            .set_dword(11, u32::from(queue_entries - 1))
            .set_dword(12, kato_ms);
        let mut data = vec![0u8; CONNECT_DATA_BYTES];
        data[16..18].copy_from_slice(&cntlid.to_le_bytes());
        data[256..256 + subnqn.len()].copy_from_slice(subnqn.as_bytes());
        data[512..512 + hostnqn.len()].copy_from_slice(hostnqn.as_bytes());
        Ok(self.execute(sqe, &data, 0)?.0)
    }

    /// Property Set CC.EN = 1 with CSS = the I/O command sets (as Linux
    /// does when CAP says so); the completion's status.
    pub fn enable(&mut self) -> io::Result<Status> {
        let mut sqe = Sqe::new(opcode::FABRICS, 0);
        sqe.0[4] = fctype::PROPERTY_SET;
        // EN, CSS 110b, IOSQES 6, IOCQES 4
        let cc = 1 | 0b110 << 4 | 6 << 16 | 4 << 20;
        sqe.set_dword(11, property::CC).set_dword(12, cc);
        Ok(self.execute(sqe, &[], 0)?.0.status)
    }

    /// Property Get: the value.
    pub fn property(&mut self, offset: u32, eight_bytes: bool) -> io::Result<(Status, u64)> {
        let mut sqe = Sqe::new(opcode::FABRICS, 0);
        sqe.0[4] = fctype::PROPERTY_GET;
        sqe.set_dword(10, u32::from(eight_bytes))
            .set_dword(11, offset);
        let cqe = self.execute(sqe, &[], 0)?.0;
        Ok((cqe.status, cqe.result))
    }
}

/// A controller as `nvme connect` makes one: the admin queue connected
/// and enabled, and I/O queues 1..=n of it.
pub struct Controller {
    pub admin: Client,
    pub io: Vec<Client>,
    pub cntlid: u16,
}

fn refused(what: &str, s: Status) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionRefused, format!("{what}: {s}"))
}

impl Controller {
    /// Connects to subsystem `subnqn` at `addr` with `io_queues` I/O
    /// queues (Set Features Number of Queues first) and keep alive
    /// timeout `kato_ms`.
    pub fn connect(
        addr: SocketAddr,
        subnqn: &str,
        hostnqn: &str,
        digests: Digests,
        io_queues: u16,
        kato_ms: u32,
    ) -> io::Result<Controller> {
        let mut admin = Client::connect(addr, digests)?;
        let c = admin.fabrics_connect(subnqn, hostnqn, 0, 0xFFFF, 32, kato_ms)?;
        if !c.status.is_success() {
            return Err(refused("Connect", c.status));
        }
        let cntlid = c.result as u16;
        let s = admin.enable()?;
        if !s.is_success() {
            return Err(refused("CC.EN", s));
        }
        let mut nq = Sqe::new(opcode::SET_FEATURES, 0);
        let n = u32::from(io_queues.max(1) - 1);
        nq.set_dword(10, 0x07).set_dword(11, n | n << 16);
        let (cqe, _) = admin.execute(nq, &[], 0)?;
        if !cqe.status.is_success() {
            return Err(refused("Set Features Number of Queues", cqe.status));
        }
        let mut io = Vec::new();
        for qid in 1..=io_queues {
            let mut q = Client::connect(addr, digests)?;
            let c = q.fabrics_connect(subnqn, hostnqn, qid, cntlid, 128, 0)?;
            if !c.status.is_success() {
                return Err(refused("Connect (I/O queue)", c.status));
            }
            io.push(q);
        }
        Ok(Controller { admin, io, cntlid })
    }
}
