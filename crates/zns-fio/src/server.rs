//! The device server: one device (opened from a fio `filename` by
//! zns-target, as `zns bench` opens it: a built-in profile, a profile TOML,
//! a device image or a `raid:` array) running on zns-sim's wall-clock-paced runtime on its own OS thread,
//! reachable through an abstract Unix socket. fio's job processes are forked
//! from the process that started the server, so every job of a run reaches
//! the same device; each connection gets a reader thread that injects its
//! requests into the runtime through a [`Remote`], in arrival order (so writes
//! to one zone reach the device in submission order, as fio's zbd code
//! requires).
//!
//! This crate sits outside the deterministic layers, like a real-device
//! backend: it spawns OS threads; the wall clock is read only by zns-sim's
//! pacer.

use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::AsRawFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use zns_core::{NvmeError, NvmeStatus, ReportFilter, ZoneAction, ZoneSendCmd};
use zns_sim::sync::Notify;
use zns_sim::timing::HostStack;
use zns_sim::{Handle, Remote, Runtime};
use zns_target::{Devices, Target};

use crate::proto::{Geometry, Op, Request, Response, Zone, REQUEST_BYTES};
use crate::shm::{self, Region};

/// What device to serve and how to pace it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceConfig {
    /// fio's `filename`: a built-in profile name, a profile TOML file or a
    /// device image made by `zns create`.
    pub filename: String,
    /// Pacing: one virtual second takes `1 / speed` wall seconds.
    pub speed: f64,
    /// The host I/O stack whose overheads the device adds.
    pub host_stack: HostStack,
    /// The runtime's seed.
    pub seed: u64,
    /// Pacer waits up to this long busy-poll instead of sleeping (see
    /// `Runtime::set_pacer_spin_ns`).
    pub spin_ns: u64,
}

impl DeviceConfig {
    /// Defaults: real time, the io-uring-none host stack (the stack `zns
    /// bench` uses for fio's kernel engines), seed 1.
    pub fn new(filename: &str) -> DeviceConfig {
        DeviceConfig {
            filename: filename.to_string(),
            speed: 1.0,
            host_stack: HostStack::IoUringNone,
            seed: 1,
            spin_ns: DEFAULT_SPIN_NS,
        }
    }
}

/// Default busy-poll window of the pacer: sleeping threads wake 20-60 µs
/// late on the machines measured (docs/fio-engine.md), so shorter waits
/// spin.
pub const DEFAULT_SPIN_NS: u64 = 100_000;

/// A failed request: errno plus the NVMe status behind it (0 when the
/// request failed before reaching the device).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    pub errno: i32,
    pub nvme_status: u16,
}

impl Failure {
    fn errno(errno: i32) -> Failure {
        Failure {
            errno,
            nvme_status: 0,
        }
    }
}

impl From<NvmeError> for Failure {
    fn from(e: NvmeError) -> Failure {
        Failure {
            errno: zns_linux::errno_for_status(e.status),
            nvme_status: e.status.code(),
        }
    }
}

fn geometry_of(target: &Target) -> Geometry {
    let g = target.geometry();
    let max_active_zones = target
        .zoned()
        .map(|z| u64::from(z.config().max_active_zones))
        .unwrap_or(0);
    Geometry {
        lba_bytes: g.lba_bytes,
        capacity_bytes: g.capacity_bytes,
        zone_bytes: g.zone_bytes,
        zone_cap_bytes: g.zone_cap_bytes,
        zone_count: g.zone_count,
        max_open_zones: u64::from(g.max_open_zones),
        max_active_zones,
        max_transfer_bytes: g.max_transfer_bytes,
        zoned: target.zoned().is_some(),
    }
}

/// Runs one request against the device; the payload of a successful report.
pub async fn execute(
    target: &Target,
    geo: &Geometry,
    req: &Request,
    region: Option<&Region>,
) -> Result<Vec<u8>, Failure> {
    match req.op {
        Op::Read | Op::Write => {
            let region = region.ok_or(Failure::errno(libc::EINVAL))?;
            if req.len_bytes == 0
                || req.offset_bytes % geo.lba_bytes != 0
                || req.len_bytes % geo.lba_bytes != 0
            {
                return Err(Failure::errno(libc::EINVAL));
            }
            if !region.contains(req.region_offset, req.len_bytes) {
                return Err(Failure::errno(libc::EFAULT));
            }
            // Larger than one command may carry (MDTS): `zns bench` refuses
            // such a bs too; the kernel would split it (docs/fio-engine.md).
            if geo.max_transfer_bytes > 0 && req.len_bytes > geo.max_transfer_bytes {
                return Err(Failure::errno(libc::EINVAL));
            }
            // SAFETY: inside the region (checked); the client hands the
            // buffer over until this request's response.
            let buf = unsafe { region.slice_mut(req.region_offset, req.len_bytes) };
            let slba = req.offset_bytes / geo.lba_bytes;
            if req.op == Op::Read {
                target.read(slba, buf).await?;
            } else {
                target.write(slba, buf).await?;
            }
            Ok(Vec::new())
        }
        Op::Flush => {
            target.flush().await?;
            Ok(Vec::new())
        }
        Op::Reset | Op::Finish => {
            let zns = target.zoned().ok_or(Failure::errno(libc::EOPNOTSUPP))?;
            if req.len_bytes == 0
                || req.offset_bytes % geo.zone_bytes != 0
                || req.len_bytes % geo.zone_bytes != 0
                || req
                    .offset_bytes
                    .checked_add(req.len_bytes)
                    .map_or(true, |end| end > geo.capacity_bytes)
            {
                return Err(Failure::errno(libc::EINVAL));
            }
            let action = if req.op == Op::Reset {
                ZoneAction::Reset
            } else {
                ZoneAction::Finish
            };
            let zone_lbas = geo.zone_bytes / geo.lba_bytes;
            let first = req.offset_bytes / geo.zone_bytes;
            for zone in first..first + req.len_bytes / geo.zone_bytes {
                let cmd = ZoneSendCmd {
                    action,
                    slba: zone * zone_lbas,
                    select_all: false,
                };
                if let Err(e) = zns.zone_send(cmd).await {
                    // Finishing a full zone, or resetting an empty one, is
                    // not an error for Linux either.
                    if e.status != NvmeStatus::InvalidZoneStateTransition {
                        return Err(e.into());
                    }
                }
            }
            Ok(Vec::new())
        }
        Op::Report => {
            let zns = target.zoned().ok_or(Failure::errno(libc::EOPNOTSUPP))?;
            let mut out = Vec::new();
            if req.offset_bytes >= geo.capacity_bytes || req.count == 0 {
                return Ok(out);
            }
            let zone_lbas = geo.zone_bytes / geo.lba_bytes;
            let start_lba = req.offset_bytes / geo.zone_bytes * zone_lbas;
            let zones = zns
                .report_zones(start_lba, ReportFilter::All, req.count as usize)
                .await?;
            for d in zones {
                let start_bytes = d.start_lba * geo.lba_bytes;
                let capacity_bytes = d.capacity_lbas * geo.lba_bytes;
                let wp_bytes = if d.wp_valid() {
                    d.write_pointer * geo.lba_bytes
                } else {
                    start_bytes + capacity_bytes
                };
                Zone {
                    start_bytes,
                    wp_bytes,
                    len_bytes: geo.zone_bytes,
                    capacity_bytes,
                    zone_type: u32::from(d.zone_type.code()),
                    cond: u32::from(zns_linux::blk_zone_cond(d.state)),
                }
                .encode(&mut out);
            }
            Ok(out)
        }
        Op::MapRegion => Err(Failure::errno(libc::EINVAL)),
    }
}

/// The device and its stop signal, owned by the runtime thread.
struct DeviceCtx {
    target: Target,
    geo: Geometry,
    stop: Rc<Cell<bool>>,
    stopped: Notify,
}

thread_local! {
    /// The device of the server whose runtime runs on this thread.
    static DEVICE: RefCell<Option<DeviceCtx>> = const { RefCell::new(None) };
}

/// A running device server. Dropping it (or [`Server::stop`]) stops the
/// runtime and closes the device (an image's zone table is saved).
pub struct Server {
    name: String,
    remote: Option<Remote>,
    runtime: Option<JoinHandle<()>>,
    acceptor: Option<JoinHandle<()>>,
    closing: Arc<AtomicBool>,
    geometry: Geometry,
}

static NEXT_SERVER: AtomicU64 = AtomicU64::new(0);

/// Why a server did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// `filename=` does not name a device that opens.
    #[error(transparent)]
    Target(zns_target::TargetError),
    #[error("znskit_speed={}: {}", .0 .0, .0)]
    Speed(zns_sim::BadSpeed),
    #[error("{0}: zero zone or LBA size")]
    Geometry(String),
    #[error("cannot start the {0} thread: {1}")]
    Thread(&'static str, std::io::Error),
    #[error("the device thread ended before opening the device")]
    Gone,
    #[error("cannot listen on @{name}: {source}")]
    Socket {
        name: String,
        #[source]
        source: std::io::Error,
    },
}

impl Server {
    /// Opens the device on a new paced runtime thread and starts listening.
    pub fn start(cfg: &DeviceConfig) -> Result<Server, ServerError> {
        let (tx, rx) = mpsc::channel();
        let thread_cfg = cfg.clone();
        let runtime = std::thread::Builder::new()
            .name("znskit-fio-device".into())
            .spawn(move || run_device(thread_cfg, tx))
            .map_err(|e| ServerError::Thread("device", e))?;
        let (geometry, remote) = match rx.recv() {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => {
                let _ = runtime.join();
                return Err(e);
            }
            Err(_) => {
                let _ = runtime.join();
                return Err(ServerError::Gone);
            }
        };
        let name = format!(
            "znskit-fio.{}.{}",
            std::process::id(),
            NEXT_SERVER.fetch_add(1, Ordering::Relaxed)
        );
        let socket = |e| ServerError::Socket {
            name: name.clone(),
            source: e,
        };
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).map_err(socket)?;
        let listener = UnixListener::bind_addr(&addr).map_err(socket)?;
        let closing = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let remote = remote.clone();
            let closing = closing.clone();
            std::thread::Builder::new()
                .name("znskit-fio-accept".into())
                .spawn(move || accept_loop(listener, remote, geometry, closing))
                .map_err(|e| ServerError::Thread("accept", e))?
        };
        Ok(Server {
            name,
            remote: Some(remote),
            runtime: Some(runtime),
            acceptor: Some(acceptor),
            closing,
            geometry,
        })
    }

    /// The abstract socket name clients connect to.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// Stops the runtime (commands in flight are dropped) and closes the
    /// device; waits for the device thread.
    pub fn stop(&mut self) {
        if let Some(remote) = self.remote.take() {
            remote.spawn(|_h: &Handle| {
                DEVICE.with(|d| {
                    if let Some(ctx) = d.borrow().as_ref() {
                        ctx.stop.set(true);
                        ctx.stopped.notify_waiters();
                    }
                });
            });
        }
        if let Some(t) = self.runtime.take() {
            let _ = t.join();
        }
        if let Some(t) = self.acceptor.take() {
            self.closing.store(true, Ordering::SeqCst);
            // wake the accept() call
            if let Ok(addr) = SocketAddr::from_abstract_name(self.name.as_bytes()) {
                let _ = UnixStream::connect_addr(&addr);
            }
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

type Started = Result<(Geometry, Remote), ServerError>;

fn run_device(cfg: DeviceConfig, started: mpsc::Sender<Started>) {
    let mut rt = match Runtime::paced(cfg.seed, cfg.speed) {
        Ok(rt) => rt,
        Err(e) => {
            let _ = started.send(Err(ServerError::Speed(e)));
            return;
        }
    };
    rt.set_pacer_spin_ns(cfg.spin_ns);
    let mut devices = Devices::default();
    let target = match devices.target(&mut rt, &cfg.filename, None) {
        Ok(t) => t,
        Err(e) => {
            let _ = started.send(Err(ServerError::Target(e)));
            return;
        }
    };
    devices.set_host_stack(&cfg.filename, cfg.host_stack);
    let geo = geometry_of(&target);
    if geo.zoned && (geo.zone_bytes == 0 || geo.lba_bytes == 0) {
        let _ = started.send(Err(ServerError::Geometry(cfg.filename.clone())));
        return;
    }
    let stop = Rc::new(Cell::new(false));
    let stopped = Notify::new();
    DEVICE.with(|d| {
        *d.borrow_mut() = Some(DeviceCtx {
            target,
            geo,
            stop: stop.clone(),
            stopped: stopped.clone(),
        })
    });
    if started.send(Ok((geo, rt.remote()))).is_err() {
        return;
    }
    rt.block_on(async move {
        while !stop.get() {
            stopped.notified().await;
        }
    });
    // Close the device while its runtime still exists.
    DEVICE.with(|d| d.borrow_mut().take());
    drop(devices);
    drop(rt);
}

fn accept_loop(listener: UnixListener, remote: Remote, geo: Geometry, closing: Arc<AtomicBool>) {
    for stream in listener.incoming() {
        if closing.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let remote = remote.clone();
        let spawned = std::thread::Builder::new()
            .name("znskit-fio-conn".into())
            .spawn(move || serve_connection(stream, remote, geo));
        if let Err(e) = spawned {
            eprintln!("znskit-fio: cannot serve a connection: {e}");
        }
    }
}

/// One client connection: its write side (used by the reader thread and by
/// the runtime tasks completing its commands), its shared region, and the
/// responses waiting to be sent together.
struct Conn {
    out: Mutex<UnixStream>,
    region: Mutex<Option<Arc<Region>>>,
    /// Encoded responses not sent yet (completions of one instant go out in
    /// one write).
    pending: Mutex<Vec<u8>>,
    flush_scheduled: AtomicBool,
}

impl Conn {
    fn encode(tag: u64, result: Result<Vec<u8>, Failure>, out: &mut Vec<u8>) {
        let (resp, payload) = match result {
            Ok(payload) => (
                Response {
                    tag,
                    errno: 0,
                    nvme_status: 0,
                    payload_bytes: payload.len() as u32,
                },
                payload,
            ),
            Err(f) => (
                Response {
                    tag,
                    errno: f.errno,
                    nvme_status: f.nvme_status,
                    payload_bytes: 0,
                },
                Vec::new(),
            ),
        };
        resp.encode(out);
        out.extend_from_slice(&payload);
    }

    /// Sends one response now.
    fn reply(&self, tag: u64, result: Result<Vec<u8>, Failure>) {
        let mut bytes = Vec::new();
        Conn::encode(tag, result, &mut bytes);
        self.send(&bytes);
    }

    fn send(&self, bytes: &[u8]) {
        let out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        // A client that went away just stops getting completions.
        let _ = send_all(&out, bytes);
    }

    /// On the runtime thread: queues a response and makes sure a task sends
    /// the queue once every task ready at this instant has run.
    fn complete(self: &Arc<Self>, h: &Handle, tag: u64, result: Result<Vec<u8>, Failure>) {
        Conn::encode(
            tag,
            result,
            &mut self.pending.lock().unwrap_or_else(PoisonError::into_inner),
        );
        if !self.flush_scheduled.swap(true, Ordering::AcqRel) {
            let conn = self.clone();
            let h2 = h.clone();
            h.spawn(async move {
                h2.yield_now().await;
                conn.flush_scheduled.store(false, Ordering::Release);
                let bytes = std::mem::take(
                    &mut *conn.pending.lock().unwrap_or_else(PoisonError::into_inner),
                );
                conn.send(&bytes);
            });
        }
    }

    fn region(&self) -> Option<Arc<Region>> {
        self.region
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Writes all of `bytes` without raising SIGPIPE in the host program.
pub fn send_all(stream: &UnixStream, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        // SAFETY: a valid buffer and fd.
        let n = unsafe {
            libc::send(
                stream.as_raw_fd(),
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        bytes = &bytes[n as usize..];
    }
    Ok(())
}

/// Reads a connection's requests (as many as have arrived per read) and
/// injects each batch into the runtime in one closure, in arrival order.
fn serve_connection(stream: UnixStream, remote: Remote, geo: Geometry) {
    let Ok(out) = stream.try_clone() else { return };
    let conn = Arc::new(Conn {
        out: Mutex::new(out),
        region: Mutex::new(None),
        pending: Mutex::new(Vec::new()),
        flush_scheduled: AtomicBool::new(false),
    });
    let mut hello = Vec::new();
    geo.encode(&mut hello);
    conn.reply(0, Ok(hello));
    let mut buf = vec![0u8; 64 * REQUEST_BYTES];
    let mut have = 0usize;
    loop {
        let (n, mut fd) = match shm::recv_some_with_fd(&stream, &mut buf[have..]) {
            Ok(v) => v,
            Err(_) => return, // the client closed the connection
        };
        have += n;
        let whole = have / REQUEST_BYTES * REQUEST_BYTES;
        let mut batch = Vec::new();
        for chunk in buf[..whole].chunks_exact(REQUEST_BYTES) {
            let Some(req) = Request::decode(chunk.try_into().expect("exact chunk")) else {
                eprintln!("znskit-fio: malformed request from a client; closing its connection");
                return;
            };
            if req.op == Op::MapRegion {
                // The client waits for this answer before sending I/O.
                let result = match fd.take() {
                    None => Err(Failure::errno(libc::EBADF)),
                    Some(fd) => match Region::map(fd, req.len_bytes as usize) {
                        Ok(region) => {
                            *conn.region.lock().unwrap_or_else(PoisonError::into_inner) =
                                Some(Arc::new(region));
                            Ok(Vec::new())
                        }
                        Err(e) => Err(Failure::errno(e.raw_os_error().unwrap_or(libc::EINVAL))),
                    },
                };
                conn.reply(req.tag, result);
            } else {
                batch.push(req);
            }
        }
        buf.copy_within(whole..have, 0);
        have -= whole;
        if batch.is_empty() {
            continue;
        }
        let conn = conn.clone();
        let region = conn.region();
        remote.spawn(move |h: &Handle| {
            let found =
                DEVICE.with(|d| d.borrow().as_ref().map(|ctx| (ctx.target.clone(), ctx.geo)));
            for req in batch {
                let Some((target, geo)) = found.clone() else {
                    conn.reply(req.tag, Err(Failure::errno(libc::ENODEV)));
                    continue;
                };
                let conn = conn.clone();
                let region = region.clone();
                let h2 = h.clone();
                h.spawn(async move {
                    let result = execute(&target, &geo, &req, region.as_deref()).await;
                    conn.complete(&h2, req.tag, result);
                });
            }
        });
    }
}
