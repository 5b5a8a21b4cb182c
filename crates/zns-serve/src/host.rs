//! The runtime thread: the served devices live on zns-sim's runtime, paced
//! to the wall clock, on one OS thread of their own (a device is not `Send`;
//! one clock for all of them). Queue threads hand requests over through a
//! [`Remote`] and get each result through a callback that runs on this
//! thread. This crate sits outside the deterministic layers, like the fio
//! engine: it starts OS threads; only the pacer reads the wall clock.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::mpsc;
use std::thread::JoinHandle;

use zns_sim::sync::Notify;
use zns_sim::{Handle, Remote, Runtime};

use crate::exec::{execute, Done, Failure};
use crate::params::{geometry, Geometry, GeometryError};
use crate::request::Request;
use crate::stats::{HostReport, RequestCounts, ServedStats};
use zns_target::Target;

/// How the runtime runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostConfig {
    /// The runtime's seed.
    pub seed: u64,
    /// Pacing: one virtual second takes `1 / speed` wall seconds.
    pub speed: f64,
    /// The server's request buffer (caps the kernel's request size).
    pub io_buf_bytes: u32,
}

/// What an opener gives the host: the devices to serve, whatever must live
/// as long as they do (controllers, an image's store), and what to do at
/// the stop; all are dropped on the runtime's thread when the host stops,
/// so an image saves its zone table.
pub struct Opened {
    pub served: Vec<(String, Target)>,
    pub keep_alive: Box<dyn Any>,
    /// Runs on the runtime once the last request is done: shuts the devices
    /// down cleanly (an array logs its write pointers) and returns their
    /// own counters (for [`HostReport::devices`]).
    pub finish: Box<dyn FnOnce(&mut Runtime) -> serde_json::Value>,
}

/// Why the host did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    #[error("--speed {}: {}", .0 .0, .0)]
    Speed(zns_sim::BadSpeed),
    #[error(transparent)]
    Open(#[from] zns_target::TargetError),
    #[error("{name}: {source}")]
    Geometry { name: String, source: GeometryError },
    #[error("the runtime thread could not start: {0}")]
    Thread(std::io::Error),
    #[error("the runtime thread ended before the devices were open")]
    Gone,
}

/// A served device as the queue threads know it.
#[derive(Debug, Clone)]
pub struct HostedDevice {
    /// The name it was opened by.
    pub name: String,
    pub geometry: Geometry,
}

thread_local! {
    /// The devices of the host whose runtime runs on this thread.
    static SERVED: RefCell<Vec<Target>> = const { RefCell::new(Vec::new()) };
    /// The requests each of them completed, and its logical block size.
    static COUNTS: RefCell<Vec<(RequestCounts, u64)>> = const { RefCell::new(Vec::new()) };
}

/// The running runtime thread. Dropping it stops the runtime and closes the
/// devices.
pub struct Host {
    remote: Option<Remote>,
    thread: Option<JoinHandle<()>>,
    devices: Vec<HostedDevice>,
    report: Option<mpsc::Receiver<HostReport>>,
}

impl Host {
    /// Starts the runtime thread and opens the devices there with `open`.
    pub fn start<F>(cfg: HostConfig, open: F) -> Result<Host, HostError>
    where
        F: FnOnce(&mut Runtime) -> Result<Opened, zns_target::TargetError> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel();
        let (report_tx, report_rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("zns-serve-runtime".into())
            .spawn(move || run(cfg, open, tx, report_tx))
            .map_err(HostError::Thread)?;
        match rx.recv() {
            Ok(Ok((remote, devices))) => Ok(Host {
                remote: Some(remote),
                thread: Some(thread),
                devices,
                report: Some(report_rx),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(HostError::Gone)
            }
        }
    }

    /// The devices, in the order the opener gave them.
    pub fn devices(&self) -> &[HostedDevice] {
        &self.devices
    }

    /// A handle for queue threads.
    pub fn link(&self, index: usize) -> Link {
        Link {
            remote: self.remote.clone(),
            index,
        }
    }

    /// Stops the runtime (after the requests already handed over), closes
    /// the devices, and returns what they did (`None` when stopped before,
    /// or when the runtime thread died).
    pub fn stop(&mut self) -> Option<HostReport> {
        if let Some(remote) = self.remote.take() {
            remote.spawn(|_h: &Handle| {
                STOP.with(|s| {
                    s.stopped.set(true);
                    s.notify.notify_one();
                })
            });
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.report.take()?.try_recv().ok()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How a queue thread reaches one device of the host.
#[derive(Clone)]
pub struct Link {
    remote: Option<Remote>,
    index: usize,
}

impl Link {
    /// Runs `req` (with `payload`, a write's data) on the device; `done`
    /// gets the result on the runtime's thread, exactly once: a request the
    /// runtime never runs (it has stopped) completes with ENODEV.
    pub fn submit<D>(&self, req: Request, payload: Vec<u8>, done: D)
    where
        D: FnOnce(Result<Done, Failure>) + Send + 'static,
    {
        let done = Completion(Some(done));
        let Some(remote) = &self.remote else {
            return; // `done` completes with ENODEV as it drops
        };
        let index = self.index;
        remote.spawn(move |h: &Handle| {
            let Some(dev) = SERVED.with(|s| s.borrow().get(index).cloned()) else {
                return;
            };
            drop(h.spawn(async move {
                let result = execute(&dev, req, &payload).await;
                COUNTS.with(|c| {
                    if let Some((c, lba_bytes)) = c.borrow_mut().get_mut(index) {
                        c.count(&req, *lba_bytes, result.is_ok());
                    }
                });
                done.complete(result);
            }));
        });
    }
}

impl Link {
    /// Runs `work` on the device, on the runtime's thread: `work` gets the
    /// device and returns the future to run there (for front ends that
    /// speak the device's own commands, as the NVMe/TCP target does);
    /// `done` gets its output, or `None` when the runtime never ran it (it
    /// has stopped). Not counted in the request counts
    /// ([`Link::run_counted`] is).
    pub fn run<W, F, D>(&self, work: W, done: D)
    where
        W: FnOnce(Target) -> F + Send + 'static,
        F: std::future::Future + 'static,
        D: FnOnce(Option<F::Output>) + Send + 'static,
    {
        let done = OnceOrNone(Some(done), std::marker::PhantomData);
        let Some(remote) = &self.remote else {
            return; // `done` gets None as it drops
        };
        let index = self.index;
        remote.spawn(move |h: &Handle| {
            let Some(dev) = SERVED.with(|s| s.borrow().get(index).cloned()) else {
                return;
            };
            drop(h.spawn(async move {
                let out = work(dev).await;
                done.complete(out);
            }));
        });
    }
}

impl Link {
    /// [`Link::run`] for a command the report counts (`--stats`: the
    /// requests by kind, as the ublk front end's are): `kind` names it
    /// (`read`, `write`, `zone-append`, … as [`crate::Request::name`]
    /// does), `bytes` is its data; it counts as failed when `work`'s
    /// output is an error. A command the runtime never ran is not counted.
    pub fn run_counted<W, F, T, E, D>(&self, kind: &'static str, bytes: u64, work: W, done: D)
    where
        W: FnOnce(Target) -> F + Send + 'static,
        F: std::future::Future<Output = Result<T, E>> + 'static,
        D: FnOnce(Option<Result<T, E>>) + Send + 'static,
    {
        let index = self.index;
        self.run(work, move |out| {
            // (on the runtime's thread when it ran: COUNTS is its own)
            if let Some(out) = &out {
                COUNTS.with(|c| {
                    if let Some((c, _)) = c.borrow_mut().get_mut(index) {
                        c.count_kind(kind, bytes, out.is_ok());
                    }
                });
            }
            done(out);
        });
    }
}

/// [`Link::run`]'s callback: called once with the output, or with `None`
/// when dropped uncalled.
struct OnceOrNone<T, D: FnOnce(Option<T>)>(Option<D>, std::marker::PhantomData<fn(T)>);

impl<T, D: FnOnce(Option<T>)> OnceOrNone<T, D> {
    fn complete(mut self, out: T) {
        if let Some(done) = self.0.take() {
            done(Some(out));
        }
    }
}

impl<T, D: FnOnce(Option<T>)> Drop for OnceOrNone<T, D> {
    fn drop(&mut self) {
        if let Some(done) = self.0.take() {
            done(None);
        }
    }
}

/// A request's completion callback that runs once whatever happens: when
/// it is dropped uncalled (the closure carrying it was dropped by a stopped
/// runtime, or the device is gone) it reports ENODEV, so the queue's tag
/// never waits for ever.
struct Completion<D: FnOnce(Result<Done, Failure>)>(Option<D>);

impl<D: FnOnce(Result<Done, Failure>)> Completion<D> {
    fn complete(mut self, result: Result<Done, Failure>) {
        if let Some(done) = self.0.take() {
            done(result);
        }
    }
}

impl<D: FnOnce(Result<Done, Failure>)> Drop for Completion<D> {
    fn drop(&mut self) {
        if let Some(done) = self.0.take() {
            done(Err(Failure::errno(libc::ENODEV)));
        }
    }
}

/// The runtime thread's stop signal.
struct Stop {
    stopped: Cell<bool>,
    notify: Notify,
}

thread_local! {
    static STOP: Stop = Stop {
        stopped: Cell::new(false),
        notify: Notify::new(),
    };
}

type Started = Result<(Remote, Vec<HostedDevice>), HostError>;

fn run<F>(
    cfg: HostConfig,
    open: F,
    started: mpsc::Sender<Started>,
    report: mpsc::Sender<HostReport>,
) where
    F: FnOnce(&mut Runtime) -> Result<Opened, zns_target::TargetError>,
{
    let mut rt = match Runtime::paced(cfg.seed, cfg.speed) {
        Ok(rt) => rt,
        Err(e) => {
            let _ = started.send(Err(HostError::Speed(e)));
            return;
        }
    };
    let opened = match open(&mut rt) {
        Ok(o) => o,
        Err(e) => {
            let _ = started.send(Err(HostError::Open(e)));
            return;
        }
    };
    let mut devices = Vec::new();
    let mut served = Vec::new();
    for (name, dev) in opened.served {
        match geometry(&dev, cfg.io_buf_bytes) {
            Ok(geometry) => devices.push(HostedDevice { name, geometry }),
            Err(source) => {
                let _ = started.send(Err(HostError::Geometry { name, source }));
                return;
            }
        }
        served.push(dev);
    }
    COUNTS.with(|c| {
        *c.borrow_mut() = devices
            .iter()
            .map(|d| (RequestCounts::default(), d.geometry.lba_bytes))
            .collect()
    });
    SERVED.with(|s| *s.borrow_mut() = served);
    let names: Vec<String> = devices.iter().map(|d| d.name.clone()).collect();
    if started.send(Ok((rt.remote(), devices))).is_err() {
        return;
    }
    let started_ns = rt.now_ns();
    rt.block_on(async {
        while !STOP.with(|s| s.stopped.get()) {
            STOP.with(|s| s.notify.notified()).await;
        }
    });
    let counts = COUNTS.with(|c| std::mem::take(&mut *c.borrow_mut()));
    let virtual_ns = rt.now_ns() - started_ns;
    let devices = (opened.finish)(&mut rt);
    let _ = report.send(HostReport {
        virtual_ns,
        served: names
            .into_iter()
            .zip(counts)
            .map(|(name, (requests, _))| ServedStats { name, requests })
            .collect(),
        devices,
    });
    // close the devices while their runtime still exists
    SERVED.with(|s| s.borrow_mut().clear());
    drop(opened.keep_alive);
    drop(rt);
}
