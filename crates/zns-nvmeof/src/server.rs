//! The OS-facing target: a TCP listener and, per connection, a reader
//! thread (PDUs in, admin commands answered, I/O commands handed to the
//! device's runtime through a `zns_serve::Link`) and a writer thread (PDUs
//! out, in the order they were queued). The devices live on zns-serve's
//! paced runtime thread, as for the ublk front end; completions are encoded
//! there and queued to the writer.
//!
//! A connection is one queue: the admin queue (its Connect makes a
//! controller) or one I/O queue of a controller. Anything wrong on the wire
//! (a malformed PDU, a digest mismatch, data out of range, a host that
//! vanishes or stops its keep alives) ends that connection — with a
//! termination request when the stream is still usable — and nothing
//! else; a controller ends with its admin queue, closing its I/O queues.

// OS-facing (clippy.toml's determinism guardrails do not apply here): the
// target's threads serve sockets in real time; the devices stay on the
// paced runtime
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use zns_serve::Link;

use crate::command::{fctype, opcode, sgl, Cqe, Sqe, Status};
use crate::controller::{self, AdminReply, Connect, Controllers, Subsystem};
use crate::identify::{
    namespace_uuid, pages_log2, ControllerIdentity, Namespace, NsKind, IN_CAPSULE_DATA_BYTES,
};
use crate::io::{execute, IoCmd};
use crate::pdu::{
    self, fes, CapsuleCmd, DataPdu, Digests, IcResp, Limits, Parsed, Pdu, R2t, TermReq, WireError,
    IC_BYTES,
};

/// The largest H2CData PDU the host may send (ICResp MAXH2CDATA), bytes.
pub const MAX_H2C_DATA_BYTES: u32 = 128 * 1024;
/// C2HData PDUs carry at most this much of a command's data each.
const C2H_CHUNK_BYTES: usize = 128 * 1024;
/// Headers, digests and padding on top of a PDU's data.
const PDU_OVERHEAD_BYTES: usize = 256;

/// One exported subsystem: its namespaces' devices, by NSID - 1.
pub struct Export {
    pub subsystem: Subsystem,
    pub links: Vec<Link>,
}

/// I/O queue entries a controller offers (CAP.MQES + 1, MAXCMD).
pub const QUEUE_ENTRIES: u16 = 128;

impl Export {
    /// The subsystem `nqn` of the devices behind `links` (namespaces 1..,
    /// in order), each one asked for its geometry on the runtime's thread;
    /// `model` names it in Identify Controller.
    pub fn probe(nqn: &str, model: &str, links: Vec<Link>) -> io::Result<Export> {
        let mut namespaces = Vec::new();
        for (i, link) in links.iter().enumerate() {
            let (tx, rx) = mpsc::channel();
            link.run(
                |dev| async move { describe(&dev) },
                move |kind| {
                    let _ = tx.send(kind);
                },
            );
            let kind = rx.recv().ok().flatten().ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "the devices' runtime has stopped",
                )
            })?;
            let nsid = i as u32 + 1;
            namespaces.push(Namespace {
                nsid,
                kind,
                uuid: namespace_uuid(nqn, nsid),
            });
        }
        let max_transfer = namespaces.iter().map(Namespace::max_transfer_bytes).min();
        let append_limits: Vec<u64> = namespaces
            .iter()
            .filter_map(|ns| ns.zoned())
            .map(|c| u64::from(c.zone_append_limit_lbas) * u64::from(c.lba_bytes))
            .collect();
        let zasl = if append_limits.iter().all(|&b| b == 0) {
            0
        } else {
            pages_log2(
                append_limits
                    .iter()
                    .copied()
                    .filter(|&b| b > 0)
                    .min()
                    .unwrap_or(0),
            )
        };
        let identity = ControllerIdentity {
            subnqn: nqn.to_string(),
            serial: format!("ZNSKIT{:08X}", crc32c::crc32c(nqn.as_bytes())),
            model: format!("znskit {model}"),
            firmware: env!("CARGO_PKG_VERSION").to_string(),
            mdts: pages_log2(max_transfer.unwrap_or(128 * 1024)),
            queue_entries: QUEUE_ENTRIES,
        };
        Ok(Export {
            subsystem: Subsystem {
                identity,
                namespaces,
                zasl,
            },
            links,
        })
    }
}

/// What a device is, as a namespace.
fn describe(dev: &zns_target::Target) -> NsKind {
    match dev {
        zns_target::Target::Zoned(z) => NsKind::Zoned(z.config().clone()),
        zns_target::Target::Block(b) => NsKind::Conventional {
            lba_bytes: b.lba_bytes(),
            capacity_lbas: b.capacity_lbas(),
            max_transfer_lbas: b.max_transfer_lbas(),
        },
    }
}

struct ExportState {
    subsystem: Subsystem,
    links: Mutex<Vec<Link>>,
    controllers: Mutex<Controllers>,
}

/// A live connection, for the stop and for its controller's end.
struct ConnEntry {
    stream: TcpStream,
    /// (export, controller) once Connect bound it.
    controller: Option<(usize, u16)>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    exports: Vec<ExportState>,
    conns: Mutex<HashMap<u64, ConnEntry>>,
    next_conn: AtomicU64,
    stopping: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // a thread that panicked holding the lock leaves consistent data here
    // (plain maps); keep serving
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The running target. Dropping it stops it.
pub struct NvmeTcpServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    listener: Option<JoinHandle<()>>,
}

impl NvmeTcpServer {
    /// Listens on `addr` (port 0: any) and serves `exports`.
    pub fn start(addr: SocketAddr, exports: Vec<Export>) -> io::Result<NvmeTcpServer> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            exports: exports
                .into_iter()
                .map(|e| ExportState {
                    subsystem: e.subsystem,
                    links: Mutex::new(e.links),
                    controllers: Mutex::new(Controllers::default()),
                })
                .collect(),
            conns: Mutex::new(HashMap::new()),
            next_conn: AtomicU64::new(1),
            stopping: AtomicBool::new(false),
        });
        let s = shared.clone();
        let listener = std::thread::Builder::new()
            .name("nvme-tcp-listen".into())
            .spawn(move || accept_loop(listener, s))?;
        Ok(NvmeTcpServer {
            addr,
            shared,
            listener: Some(listener),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops listening, closes every connection, waits for their threads.
    pub fn stop(&mut self) {
        let Some(listener) = self.listener.take() else {
            return;
        };
        self.shared.stopping.store(true, Ordering::SeqCst);
        // wake the accept
        drop(TcpStream::connect(self.addr));
        let _ = listener.join();
        let threads: Vec<JoinHandle<()>> = {
            let mut conns = lock(&self.shared.conns);
            conns
                .values_mut()
                .filter_map(|c| {
                    let _ = c.stream.shutdown(Shutdown::Both);
                    c.thread.take()
                })
                .collect()
        };
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for NvmeTcpServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let _ = stream.set_nodelay(true);
        let (Ok(registered), Ok(reader)) = (stream.try_clone(), stream.try_clone()) else {
            continue;
        };
        let id = shared.next_conn.fetch_add(1, Ordering::SeqCst);
        let s = shared.clone();
        let mut conns = lock(&shared.conns);
        // (finished connections' entries go as new ones come)
        conns.retain(|_, c| c.thread.as_ref().is_some_and(|t| !t.is_finished()));
        let thread = std::thread::Builder::new()
            .name(format!("nvme-tcp-{id}"))
            .spawn(move || serve_connection(id, reader, stream, s));
        if let Ok(thread) = thread {
            conns.insert(
                id,
                ConnEntry {
                    stream: registered,
                    controller: None,
                    thread: Some(thread),
                },
            );
        }
    }
}

/// A write waiting for its data (R2T sent, H2CData coming).
struct PendingWrite {
    sqe: Sqe,
    nsid: u32,
    cmd: IoCmd,
    data: Vec<u8>,
}

/// What a connection is, once Connect bound it.
#[derive(Clone, Copy)]
struct Queue {
    export: usize,
    cntlid: u16,
    qid: u16,
    entries: u32,
}

/// Why a connection ends.
#[derive(Debug)]
enum End {
    /// The stream failed or closed (the host vanished, the server stops).
    Io(io::Error),
    /// A protocol error: a termination request is sent first.
    Wire { fes: u16, fei: u32, what: String },
    /// The host sent no keep alive within KATO.
    KeepAliveTimeout,
}

impl From<io::Error> for End {
    fn from(e: io::Error) -> End {
        End::Io(e)
    }
}

impl From<WireError> for End {
    fn from(e: WireError) -> End {
        End::Wire {
            fes: e.fes(),
            fei: e.fei(),
            what: e.to_string(),
        }
    }
}

fn wire(fes: u16, what: impl Into<String>) -> End {
    End::Wire {
        fes,
        fei: 0,
        what: what.into(),
    }
}

/// Queues encoded PDUs for the writer thread.
#[derive(Clone)]
struct Out {
    tx: mpsc::Sender<Vec<u8>>,
    digests: Digests,
}

impl Out {
    fn send(&self, pdus: Vec<u8>) {
        // (a writer that is gone has a dead stream: the reader sees it)
        let _ = self.tx.send(pdus);
    }

    fn encode(&self, pdu: &Pdu, into: &mut Vec<u8>) {
        pdu.encode(self.digests, into);
    }

    /// `data` (at most the host's `limit` bytes of it) in C2HData PDUs,
    /// then the response capsule.
    fn complete(&self, q: &Queue, sqhd: u16, cid: u16, reply: Completion, limit: usize) {
        let mut bytes = Vec::new();
        if reply.status.is_success() && !reply.data.is_empty() {
            let data = &reply.data[..reply.data.len().min(limit)];
            let chunks = data.len().div_ceil(C2H_CHUNK_BYTES);
            for (i, chunk) in data.chunks(C2H_CHUNK_BYTES).enumerate() {
                self.encode(
                    &Pdu::C2HData(DataPdu {
                        cccid: cid,
                        ttag: 0,
                        offset: (i * C2H_CHUNK_BYTES) as u32,
                        last: i + 1 == chunks,
                        success: false,
                        data: chunk.to_vec(),
                    }),
                    &mut bytes,
                );
            }
        }
        let cqe = Cqe {
            result: reply.result,
            sqhd,
            sqid: q.qid,
            cid,
            status: reply.status,
        };
        self.encode(&Pdu::CapsuleResp(cqe.encode()), &mut bytes);
        self.send(bytes);
    }
}

/// A command's outcome on the wire.
struct Completion {
    status: Status,
    result: u64,
    data: Vec<u8>,
}

impl Completion {
    fn status(status: Status) -> Completion {
        Completion {
            status,
            result: 0,
            data: Vec::new(),
        }
    }
}

struct Conn {
    id: u64,
    shared: Arc<Shared>,
    out: Out,
    queue: Option<Queue>,
    links: Vec<Link>,
    sqhd: u32,
    next_ttag: u16,
    pending: HashMap<u16, PendingWrite>,
}

fn serve_connection(id: u64, mut stream: TcpStream, write_half: TcpStream, shared: Arc<Shared>) {
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let writer = std::thread::Builder::new()
        .name(format!("nvme-tcp-{id}-tx"))
        .spawn(move || {
            let mut w = write_half;
            for pdus in rx {
                if w.write_all(&pdus).is_err() {
                    let _ = w.shutdown(Shutdown::Both);
                    break;
                }
            }
        });
    let Ok(writer) = writer else {
        return;
    };
    let mut conn = Conn {
        id,
        shared: shared.clone(),
        out: Out {
            tx,
            digests: Digests::default(),
        },
        queue: None,
        links: Vec::new(),
        sqhd: 0,
        next_ttag: 1,
        pending: HashMap::new(),
    };
    let end = conn.run(&mut stream);
    if let End::Wire { fes, fei, what } = &end {
        eprintln!("zns serve --nvme-tcp: connection {id}: {what}: closing it");
        let mut bytes = Vec::new();
        conn.out.encode(
            &Pdu::C2HTermReq(TermReq {
                fes: *fes,
                fei: *fei,
                header: Vec::new(),
            }),
            &mut bytes,
        );
        conn.out.send(bytes);
    } else if let End::Io(e) = &end {
        // (a host that ends with a termination request says why)
        if e.kind() == io::ErrorKind::ConnectionAborted {
            eprintln!("zns serve --nvme-tcp: connection {id}: {e}");
        }
    } else if let End::KeepAliveTimeout = end {
        eprintln!("zns serve --nvme-tcp: connection {id}: no keep alive within KATO: closing the controller");
    }
    // the writer drains what is queued (completions still running on the
    // runtime hold their own senders and are dropped with the stream)
    drop(conn.out);
    let _ = writer.join();
    let _ = stream.shutdown(Shutdown::Both);
    // an admin queue's end is its controller's end: close its I/O queues
    if let Some(q) = conn.queue {
        if q.qid == 0 {
            if let Some(e) = shared.exports.get(q.export) {
                lock(&e.controllers).remove(q.cntlid);
            }
            for (_, c) in lock(&shared.conns).iter() {
                if c.controller == Some((q.export, q.cntlid)) {
                    let _ = c.stream.shutdown(Shutdown::Both);
                }
            }
        }
    }
}

impl Conn {
    fn run(&mut self, stream: &mut TcpStream) -> End {
        let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
        let mut limits = Limits {
            digests: Digests::default(),
            max_pdu_bytes: IC_BYTES,
        };
        let mut connected = false;
        loop {
            match pdu::parse(&buf, &limits) {
                Err(e) => return e.into(),
                Ok(Parsed::Pdu(p, used)) => {
                    buf.drain(..used);
                    let result = if connected {
                        self.handle(p)
                    } else {
                        match p {
                            Pdu::IcReq(req) => {
                                if req.pfv != 0 {
                                    return wire(fes::UNSUPPORTED_PARAMETER, "ICReq PFV not 0");
                                }
                                if req.hpda != 0 {
                                    return wire(
                                        fes::UNSUPPORTED_PARAMETER,
                                        "ICReq HPDA: only unaligned (0) PDU data is offered",
                                    );
                                }
                                connected = true;
                                limits = Limits {
                                    digests: req.digests,
                                    max_pdu_bytes: PDU_OVERHEAD_BYTES
                                        + (MAX_H2C_DATA_BYTES.max(IN_CAPSULE_DATA_BYTES)) as usize,
                                };
                                let mut bytes = Vec::new();
                                self.out.encode(
                                    &Pdu::IcResp(IcResp {
                                        pfv: 0,
                                        cpda: 0,
                                        digests: req.digests,
                                        maxh2cdata: MAX_H2C_DATA_BYTES,
                                    }),
                                    &mut bytes,
                                );
                                self.out.send(bytes);
                                // from now on the PDUs carry the digests
                                self.out.digests = req.digests;
                                Ok(())
                            }
                            _ => Err(wire(fes::PDU_SEQUENCE_ERROR, "first PDU is not an ICReq")),
                        }
                    };
                    if let Err(end) = result {
                        return end;
                    }
                }
                Ok(Parsed::NeedMore(n)) => {
                    let have = buf.len();
                    buf.resize(n.max(have + 4096), 0);
                    match stream.read(&mut buf[have..]) {
                        Ok(0) => {
                            return End::Io(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                "the host closed the connection",
                            ))
                        }
                        Ok(got) => buf.truncate(have + got),
                        Err(e)
                            if matches!(
                                e.kind(),
                                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                            ) =>
                        {
                            return End::KeepAliveTimeout
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => buf.truncate(have),
                        Err(e) => return End::Io(e),
                    }
                }
            }
        }
    }

    fn handle(&mut self, p: Pdu) -> Result<(), End> {
        match p {
            Pdu::CapsuleCmd(c) => self.command(c, None),
            Pdu::H2CData(d) => self.h2c_data(d),
            Pdu::H2CTermReq(t) => Err(End::Io(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                format!("the host ended the connection (FES {:#x})", t.fes),
            ))),
            other => Err(wire(
                fes::PDU_SEQUENCE_ERROR,
                format!("a host sent a controller's PDU ({other:?})"),
            )),
        }
    }

    fn next_sqhd(&mut self) -> u16 {
        let entries = self.queue.map_or(u32::from(u16::MAX), |q| q.entries);
        self.sqhd = (self.sqhd + 1) % entries.max(1);
        self.sqhd as u16
    }

    /// A command capsule; `data` is the data an R2T brought in.
    fn command(&mut self, c: CapsuleCmd, data: Option<Vec<u8>>) -> Result<(), End> {
        let sqe = Sqe(c.sqe);
        let sqhd = self.next_sqhd();
        let Some(q) = self.queue else {
            // the first command must be Connect
            if sqe.opcode() == opcode::FABRICS && sqe.fctype() == fctype::CONNECT {
                return self.connect(&sqe, &c.data, sqhd);
            }
            let q = Queue {
                export: 0,
                cntlid: 0,
                qid: 0,
                entries: 1,
            };
            self.out.complete(
                &q,
                sqhd,
                sqe.cid(),
                Completion::status(Status::COMMAND_SEQUENCE_ERROR),
                0,
            );
            return Ok(());
        };
        let host_buffer = sqe.sgl().length as usize;
        if sqe.opcode() == opcode::FABRICS && sqe.fctype() == fctype::CONNECT {
            let done = Completion::status(Status::COMMAND_SEQUENCE_ERROR);
            self.out.complete(&q, sqhd, sqe.cid(), done, 0);
            return Ok(());
        }
        if q.qid == 0 {
            let export = &self.shared.exports[q.export];
            let reply = {
                let mut ctrls = lock(&export.controllers);
                match ctrls.get_mut(q.cntlid) {
                    Some(state) => controller::admin(&export.subsystem, state, q.cntlid, &sqe),
                    None => return Err(wire(fes::PDU_SEQUENCE_ERROR, "the controller is gone")),
                }
            };
            match reply {
                AdminReply::Hold => {}
                AdminReply::Done {
                    status,
                    result,
                    data,
                } => self.out.complete(
                    &q,
                    sqhd,
                    sqe.cid(),
                    Completion {
                        status,
                        result,
                        data,
                    },
                    host_buffer,
                ),
            }
            return Ok(());
        }
        self.io_command(q, sqe, sqhd, c.data, data)
    }

    fn connect(&mut self, sqe: &Sqe, data: &[u8], sqhd: u16) -> Result<(), End> {
        let reply = Connect::decode(sqe, data).and_then(|c| {
            let export = self
                .shared
                .exports
                .iter()
                .position(|e| e.subsystem.identity.subnqn == c.subnqn)
                .ok_or(Status::CONNECT_INVALID_PARAMETERS)?;
            let e = &self.shared.exports[export];
            let mut ctrls = lock(&e.controllers);
            let cntlid = if c.qid == 0 {
                ctrls.connect_admin(&e.subsystem, &c)?
            } else {
                ctrls.connect_io(&e.subsystem, &c)?;
                c.cntlid
            };
            Ok((export, cntlid, c))
        });
        match reply {
            Ok((export, cntlid, c)) => {
                let q = Queue {
                    export,
                    cntlid,
                    qid: c.qid,
                    entries: c.queue_entries,
                };
                self.queue = Some(q);
                self.links = lock(&self.shared.exports[export].links).clone();
                if let Some(entry) = lock(&self.shared.conns).get_mut(&self.id) {
                    entry.controller = Some((export, cntlid));
                }
                // the admin queue ends when the host misses its keep alives
                if c.qid == 0 && c.kato_ms > 0 {
                    if let Some(entry) = lock(&self.shared.conns).get(&self.id) {
                        let kato = Duration::from_millis(u64::from(c.kato_ms));
                        let _ = entry.stream.set_read_timeout(Some(kato + kato / 2));
                    }
                }
                let done = Completion {
                    status: Status::SUCCESS,
                    result: u64::from(cntlid),
                    data: Vec::new(),
                };
                self.out.complete(&q, sqhd, sqe.cid(), done, 0);
            }
            Err(status) => {
                let q = Queue {
                    export: 0,
                    cntlid: 0,
                    qid: 0,
                    entries: 1,
                };
                self.out
                    .complete(&q, sqhd, sqe.cid(), Completion::status(status), 0);
            }
        }
        Ok(())
    }

    fn io_command(
        &mut self,
        q: Queue,
        sqe: Sqe,
        sqhd: u16,
        in_capsule: Vec<u8>,
        transferred: Option<Vec<u8>>,
    ) -> Result<(), End> {
        let export = &self.shared.exports[q.export];
        let cid = sqe.cid();
        let fail = |out: &Out, status: Status| {
            out.complete(&q, sqhd, cid, Completion::status(status), 0);
            Ok(())
        };
        let nsid = sqe.nsid();
        let Some(ns) = export.subsystem.namespace(nsid) else {
            return fail(&self.out, Status::INVALID_NAMESPACE);
        };
        let cmd = match IoCmd::decode(&sqe, ns) {
            Ok(cmd) => cmd,
            Err(s) => return fail(&self.out, s),
        };
        let lba_bytes = ns.lba_bytes();
        let data_in = cmd.data_in_bytes(lba_bytes);
        let data_out = cmd.data_out_bytes(lba_bytes);
        let desc = sqe.sgl();
        let mdts_bytes = 4096u64 << export.subsystem.identity.mdts;
        if data_in.max(data_out) > mdts_bytes {
            return fail(&self.out, Status::INVALID_FIELD);
        }
        if data_in + data_out > 0 && sqe.psdt() == 0 {
            return fail(&self.out, Status::INVALID_FIELD);
        }
        if u64::from(desc.length) < data_in.max(data_out) {
            return fail(&self.out, Status::SGL_INVALID_DATA_LENGTH);
        }
        let data = match transferred {
            Some(d) => d,
            None if data_in == 0 => Vec::new(),
            None => match desc.id {
                sgl::IN_CAPSULE => {
                    if in_capsule.len() as u64 != data_in || desc.address != 0 {
                        return fail(&self.out, Status::SGL_INVALID_DATA_LENGTH);
                    }
                    in_capsule
                }
                sgl::TRANSPORT => {
                    // ask for the data; the command runs when it is in
                    let ttag = self.next_ttag;
                    self.next_ttag = self.next_ttag.wrapping_add(1).max(1);
                    self.pending.insert(
                        ttag,
                        PendingWrite {
                            sqe,
                            nsid,
                            cmd,
                            data: Vec::with_capacity(data_in as usize),
                        },
                    );
                    let mut bytes = Vec::new();
                    self.out.encode(
                        &Pdu::R2t(R2t {
                            cccid: cid,
                            ttag,
                            offset: 0,
                            length: data_in as u32,
                        }),
                        &mut bytes,
                    );
                    self.out.send(bytes);
                    return Ok(());
                }
                _ => return fail(&self.out, Status::SGL_INVALID_TYPE),
            },
        };
        let Some(link) = self.links.get(nsid as usize - 1) else {
            return fail(&self.out, Status::INVALID_NAMESPACE);
        };
        let out = self.out.clone();
        let limit = desc.length as usize;
        link.run_counted(
            cmd.kind(),
            cmd.data_bytes(lba_bytes),
            move |dev| async move { execute(&dev, cmd, &data).await },
            move |done| {
                let reply = match done {
                    Some(Ok(d)) => Completion {
                        status: Status::SUCCESS,
                        result: d.result,
                        data: d.data,
                    },
                    Some(Err(s)) => Completion::status(s),
                    // the runtime has stopped
                    None => Completion::status(Status::INTERNAL_ERROR),
                };
                out.complete(&q, sqhd, cid, reply, limit);
            },
        );
        Ok(())
    }

    fn h2c_data(&mut self, d: DataPdu) -> Result<(), End> {
        let Some(p) = self.pending.get_mut(&d.ttag) else {
            return Err(wire(
                fes::INVALID_HEADER_FIELD,
                format!("H2CData for unknown transfer tag {}", d.ttag),
            ));
        };
        let Some(q) = self.queue else {
            return Err(wire(fes::PDU_SEQUENCE_ERROR, "H2CData before Connect"));
        };
        let lba_bytes = self.shared.exports[q.export]
            .subsystem
            .namespace(p.nsid)
            .map_or(0, |ns| ns.lba_bytes());
        let total = p.cmd.data_in_bytes(lba_bytes) as usize;
        if d.cccid != p.sqe.cid()
            || d.offset as usize != p.data.len()
            || p.data.len() + d.data.len() > total
        {
            return Err(wire(
                fes::DATA_OUT_OF_RANGE,
                format!(
                    "H2CData at {} (+{}) for command {} of {total} bytes",
                    d.offset,
                    d.data.len(),
                    d.cccid
                ),
            ));
        }
        p.data.extend_from_slice(&d.data);
        if p.data.len() < total {
            return Ok(());
        }
        let Some(p) = self.pending.remove(&d.ttag) else {
            return Ok(());
        };
        let sqhd = self.sqhd as u16;
        self.io_command(q, p.sqe, sqhd, Vec::new(), Some(p.data))
    }
}
