//! Virtual-time execution of parsed fio jobs against emulated devices.
//!
//! A run opens one controller per distinct `filename` and executes the
//! reporting groups (stonewall) one after another on one runtime, so device
//! state and the virtual clock carry over between groups. Inside a group:
//! preconditioning first (jobs with `precondition`), then every job clone
//! starts (after its `startdelay`) as runtime tasks: one task per outstanding
//! I/O slot (`iodepth` for async engines, else 1). Each slot loops: decide the
//! next step from the job's shared state, submit, await, record.
//!
//! zonemode=zbd follows fio's zoned rules: writes go to the write pointer of
//! zones the job holds open (one zone at a time for sequential writes, a set
//! of up to `job_max_open_zones` for random ones), one write in flight per
//! zone unless the device accepts more (zone append, ZRWA, or the
//! mq-deadline host stack that serialises them itself), full zones are reset
//! when the job comes back to them, and reads only go below write pointers.
//! The zones' state (write pointers, writes in flight, open or not) is one
//! per device, shared by the group's jobs: `numjobs` clones and jobs with
//! overlapping ranges write at the same write pointers, as fio's do.
//! Open-zone slots (`max_open_zones`, default the device limit) are shared by
//! every job on a device.
//!
//! Waiting (for a zone to drain, a reset, an open-zone slot, flow control)
//! uses one run-wide `Notify` woken at every state change; rate limits sleep
//! until the exact virtual instant. Latency is submit→complete in virtual ns;
//! `host` adds what fio's thread does that the device does not see (libaio's
//! submission latency, slat, which clat leaves out; polled jobs sharing too
//! few CPUs).
//!
//! This module holds the run loop, a job's state (its issued counters,
//! `Issued`) and its data-I/O worker; `validate` checks a job against its
//! device before the run, `zbd` holds the zonemode=zbd rules and a job's
//! view of its zones (`ZbdState`), `zone_ops` the timed zone-management jobs
//! and `verify_pass` verify='s state (`VerifyState`) and read-back.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use zns_core::{NvmeError, ReportFilter, ZoneAction, ZoneSendCmd};
use zns_sim::join::try_join_tasks;
use zns_sim::sync::Notify;
use zns_sim::{Handle, Runtime, SimRng};
use zns_target::{Devices, Geometry, Target};

use crate::distribution::BlockSampler;
use crate::job::{Ddir, HostStack, JobSpec, Precondition, Rw, ZoneMode, ZoneOp};
use crate::randmap::BlockPermutation;
use crate::stats::DirStats;

mod host;
mod validate;
mod verify_pass;
mod zbd;
mod zone_ops;

use validate::{check_shared_zone_writers, job_notes, job_range, max_block_bytes, validate};
use verify_pass::VerifyState;
use zbd::{ZbdState, ZoneTable};

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    #[error("job {job}: {msg}")]
    Setup { job: String, msg: String },
    #[error("job {job}: I/O error: {err}")]
    Io { job: String, err: NvmeError },
    /// The job's device could not be named or opened.
    #[error("job {job}: {source}")]
    Target {
        job: String,
        #[source]
        source: Box<zns_target::TargetError>,
    },
}

/// What a progress callback sees, every 10 ms of virtual time.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Reporting group running now (0-based) and how many there are.
    pub group: u32,
    pub groups: u32,
    /// Virtual clock, ns.
    pub virtual_ns: u64,
    /// Estimated share of the current group done, 0..=1.
    pub done_fraction: f64,
    /// I/Os completed so far in the run.
    pub read_ios: u64,
    pub write_ios: u64,
    /// What a user should know about the group that starts now (a size
    /// clamped to the device, a run of very many I/Os, a large verify):
    /// given once, in the report made when the group is set up, before its
    /// preconditioning and I/O (the report is also in
    /// [`RunReport::notes`]).
    pub notes: Vec<String>,
}

/// Names of the zone-management statistics a job can report.
pub const ZONE_OP_KEYS: [&str; 5] = ["reset", "finish", "open", "close", "zrwa_flush"];

/// Result of one job (one clone, or a merged reporting group).
#[derive(Debug, Clone, PartialEq)]
pub struct JobReport {
    pub name: String,
    pub groupid: u32,
    /// Number of job clones merged into this report.
    pub jobs: u32,
    pub read: DirStats,
    pub write: DirStats,
    pub trim: DirStats,
    /// Flushes (`fsync=`, `end_fsync`): fio's `sync` latencies.
    pub sync: DirStats,
    /// Timed zone-management commands by [`ZONE_OP_KEYS`] name.
    pub zone_ops: BTreeMap<&'static str, DirStats>,
    /// Measured virtual time (after ramp), ns.
    pub runtime_ns: u64,
    pub zone_resets: u64,
    pub percentile_list: Vec<f64>,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub iodepth: u32,
    pub rw: Rw,
    pub bs: u64,
    pub ioengine: &'static str,
    /// Options as given, in order, for fio's `job options`.
    pub options: indexmap::IndexMap<String, String>,
    /// The I/O error that ended the job early, as fio reports one: the
    /// report holds what it did until then, and the run fails after it is
    /// printed.
    pub error: Option<JobFailure>,
}

/// An error that ended a job: an I/O error, or blocks that failed their
/// verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFailure {
    /// fio's `error`: the errno Linux's NVMe driver gives for the status,
    /// or EILSEQ (84) for a verification failure, as fio reports it.
    pub errno: i32,
    pub cause: FailureCause,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FailureCause {
    #[error("I/O error: {0}")]
    Io(NvmeError),
    #[error("{bad_blocks} block(s) failed verification; the first: {first}")]
    Verify {
        bad_blocks: u64,
        first: crate::verify::VerifyError,
    },
}

/// fio's errno for a verification failure (EILSEQ).
const EILSEQ: i32 = 84;

impl RunReport {
    /// Every job that ended on an I/O error, as a message (empty: none).
    pub fn failures(&self) -> Vec<String> {
        self.jobs
            .iter()
            .filter_map(|j| {
                let f = j.error.as_ref()?;
                Some(format!("job {}: {}", j.name, f.cause))
            })
            .collect()
    }
}

/// Result of a whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    pub seed: u64,
    pub jobs: Vec<JobReport>,
    /// Virtual time at the end of the run, ns.
    pub virtual_ns: u64,
    /// Counters of the RAID arrays (`filename=raid:…`) of the run, by filename.
    pub raid: BTreeMap<String, zns_target::RaidStats>,
    /// The run was stopped early (see [`run_jobs_interruptible`]): the jobs'
    /// reports cover what ran until then; later groups did not run.
    pub interrupted: bool,
    /// The per-I/O logs of the job clones that asked for them
    /// (`write_lat_log`, …), in fio's thread order; the caller writes them
    /// ([`crate::iolog::JobIoLog::files`]).
    pub io_logs: Vec<crate::iolog::JobIoLog>,
    /// Every group's [`Progress::notes`], in order.
    pub notes: Vec<String>,
}

/// The host stack a job uses: `host_stack`, else spdk for `ioengine=spdk`
/// and io-uring-none for the kernel engines.
pub fn effective_host_stack(spec: &JobSpec) -> HostStack {
    spec.host_stack.unwrap_or(match spec.ioengine {
        crate::job::IoEngine::Spdk => HostStack::Spdk,
        _ => HostStack::IoUringNone,
    })
}

/// Runs `specs` (as parsed) in virtual time with `seed`.
pub fn run_jobs(specs: &[JobSpec], seed: u64) -> Result<RunReport, RunError> {
    run_jobs_with_progress(specs, seed, &mut |_| {})
}

/// Virtual time between progress reports (and deadlock checks).
const SLICE_NS: u64 = 10_000_000;

/// [`run_jobs`], calling `progress` every 10 ms of virtual time.
pub fn run_jobs_with_progress(
    specs: &[JobSpec],
    seed: u64,
    progress: &mut dyn FnMut(&Progress),
) -> Result<RunReport, RunError> {
    run_jobs_interruptible(specs, seed, progress, &|| false)
}

/// [`run_jobs_with_progress`] that stops early when `interrupted` says so
/// (asked with each progress report; a user's Ctrl-C, say): the running
/// jobs stop issuing, finish what is in flight and report what they did,
/// as fio does on SIGINT; later groups do not run.
pub fn run_jobs_interruptible(
    specs: &[JobSpec],
    seed: u64,
    progress: &mut dyn FnMut(&Progress),
    interrupted: &dyn Fn() -> bool,
) -> Result<RunReport, RunError> {
    // a real device runs in real time: the virtual clock cannot see it work
    let real = specs.iter().any(|s| {
        s.filename
            .as_deref()
            .is_some_and(zns_target::is_real_device)
    });
    let mut rt = if real {
        Runtime::paced(seed, 1.0).map_err(|msg| RunError::Setup {
            job: String::new(),
            msg: msg.to_string(),
        })?
    } else {
        Runtime::new(seed)
    };
    let handle = rt.handle();
    // verify= reads back what was written: the devices keep their data
    let mut devices = if specs.iter().any(|s| s.verify.is_some()) {
        Devices::with_options(zns_target::OpenOptions {
            store: zns_target::StoreKind::Memory,
            ..zns_target::OpenOptions::default()
        })
    } else {
        Devices::default()
    };
    let mut groups: BTreeMap<u32, Vec<&JobSpec>> = BTreeMap::new();
    for spec in specs {
        groups.entry(spec.group).or_default().push(spec);
    }
    let ngroups = groups.len() as u32;
    let shared = Rc::new(RunShared::default());
    let mut reports = Vec::new();
    let mut io_logs = Vec::new();
    let mut notes = Vec::new();
    // fio numbers every job clone of the run from 1 (its log file names)
    let mut thread_number = 0u32;
    let mut stopped = false;
    for (gi, (gid, jobs)) in groups.into_iter().enumerate() {
        if stopped {
            break;
        }
        let mut runs: Vec<Rc<JobRun>> = Vec::new();
        let mut group_notes: Vec<String> = Vec::new();
        let mut stack_of_device: BTreeMap<String, HostStack> = BTreeMap::new();
        // the zones of each device as the group's jobs see them (fio's one
        // zone table per file, shared by its jobs)
        let mut zone_tables: BTreeMap<String, Rc<ZoneTable>> = BTreeMap::new();
        for spec in jobs {
            let setup = |msg: String| RunError::Setup {
                job: spec.name.clone(),
                msg,
            };
            let fname = spec.filename.clone().ok_or_else(|| {
                setup(
                    "no filename=: name the device, e.g. filename=zn540 (a profile, a profile TOML file, an image, raid:… or /dev/…; docs/targets.md)"
                        .to_string(),
                )
            })?;
            let target = devices
                .target(&mut rt, &fname, spec.nsid)
                .map_err(|source| RunError::Target {
                    job: spec.name.clone(),
                    source: Box::new(source),
                })?;
            let stack = effective_host_stack(spec);
            if let Some(prev) = stack_of_device.insert(fname.clone(), stack) {
                if prev != stack {
                    return Err(setup(format!(
                        "jobs of one group on {fname} use different host stacks ({prev:?} and {stack:?}); one device has one host stack at a time: set host_stack (or ioengine) alike, or separate the jobs with stonewall"
                    )));
                }
            }
            devices.set_host_stack(&fname, stack);
            let geo = target.geometry();
            validate(spec, &target, &geo).map_err(&setup)?;
            let zbd_key = format!("{fname}#{}", spec.nsid.unwrap_or(0));
            let zbd = shared.zbd_for(&zbd_key, spec, &geo);
            let zone_table = zone_tables.entry(zbd_key).or_default().clone();
            let slat = (spec.ioengine == crate::job::IoEngine::Libaio)
                .then(|| devices.timing(&fname).map(|t| host::Slat::new(t, stack)))
                .flatten();
            group_notes.extend(job_notes(spec, &geo).map_err(&setup)?);
            for clone in 0..spec.numjobs.max(1) {
                let (start, len) = job_range(spec, &geo, clone).map_err(&setup)?;
                if let Some(span) = spec.random_distribution.span_bytes().filter(|&b| b > len) {
                    return Err(setup(format!(
                        "random_distribution={}: its zones cover {span} bytes, beyond the job's range of {len} bytes (size/offset)",
                        spec.random_distribution
                    )));
                }
                let rng = match spec.randseed {
                    Some(s) => SimRng::from_seed_u64(s.wrapping_add(u64::from(clone))),
                    None => handle.rng(),
                };
                let place = JobPlace {
                    target: target.clone(),
                    geo: geo.clone(),
                    slots: zbd.clone(),
                    zones: zone_table.clone(),
                    id: runs.len(),
                    start,
                    len,
                };
                runs.push(JobRun::new(
                    spec.clone(),
                    place,
                    handle.clone(),
                    shared.clone(),
                    rng,
                ));
                if let Some(r) = runs.last() {
                    r.slat.set(slat);
                }
            }
        }
        // Polled jobs (SPDK) never sleep: those sharing a cpus_allowed set
        // with more of them than CPUs take turns on the CPUs.
        let mut polled: BTreeMap<Vec<u32>, Vec<usize>> = BTreeMap::new();
        for (i, r) in runs.iter().enumerate() {
            if let (crate::job::IoEngine::Spdk, Some(cpus)) =
                (r.spec.ioengine, &r.spec.cpus_allowed)
            {
                polled.entry(cpus.clone()).or_default().push(i);
            }
        }
        for (cpus, idx) in &polled {
            for (&i, share) in idx.iter().zip(host::share_cpus(cpus.len(), idx.len())) {
                runs[i].cpu.set(share);
            }
        }
        check_shared_zone_writers(&runs)?;
        if !group_notes.is_empty() {
            progress(&Progress {
                group: gi as u32,
                groups: ngroups,
                virtual_ns: handle.now_ns(),
                done_fraction: 0.0,
                read_ios: shared.read_ios.get(),
                write_ios: shared.write_ios.get(),
                notes: group_notes.clone(),
            });
            notes.append(&mut group_notes);
        }
        // preconditioning, one job after another, before anything is timed
        for run in &runs {
            if run.spec.precondition != Precondition::None {
                let r = run.clone();
                rt.block_on(async move { r.precondition().await })?;
            }
        }
        // untimed=1: the jobs' writes change the devices' state at no time
        run_untimed(&runs, &devices)?;
        if runs
            .iter()
            .any(|r| r.spec.precondition == Precondition::Cold)
        {
            let idle = devices
                .controllers()
                .map(|c| c.flash_idle_at_ns())
                .max()
                .unwrap_or(0);
            let h = handle.clone();
            rt.block_on(async move { h.sleep_until(idle).await });
        }
        // flow groups count the weights of the group's jobs
        for run in &runs {
            if run.spec.flow != 0 {
                shared.flow(run.spec.flow_id).join(run.flow_weight());
            }
        }
        let finished = Rc::new(Cell::new(0usize));
        let group_done = Notify::new();
        let mut tasks = Vec::new();
        for run in &runs {
            let r = run.clone();
            let fin = finished.clone();
            let gd = group_done.clone();
            tasks.push(handle.spawn(async move {
                let out = r.clone().run().await;
                fin.set(fin.get() + 1);
                gd.notify_waiters();
                out
            }));
        }
        while finished.get() < runs.len() {
            // every SLICE_NS of virtual time, or at the next event when
            // nothing happens before it (idle time costs no host time: a
            // startdelay of days is one step)
            let now = handle.now_ns();
            let until = (now + SLICE_NS).max(handle.next_timer_ns().unwrap_or(0));
            let h = handle.clone();
            let gd = group_done.clone();
            rt.block_on(FirstOf(
                Box::pin(async move { h.sleep_until(until).await }),
                Box::pin(async move { gd.notified().await }),
            ));
            let done_fraction = if runs.is_empty() {
                1.0
            } else {
                runs.iter().map(|r| r.done_fraction()).sum::<f64>() / runs.len() as f64
            };
            progress(&Progress {
                group: gi as u32,
                groups: ngroups,
                virtual_ns: handle.now_ns(),
                done_fraction,
                read_ios: shared.read_ios.get(),
                write_ios: shared.write_ios.get(),
                notes: Vec::new(),
            });
            if !stopped && interrupted() {
                stopped = true;
                for r in &runs {
                    r.abort.set(true);
                }
                shared.changed.notify_waiters();
            }
            let active = shared.active_workers.get();
            if finished.get() < runs.len()
                && active > 0
                && shared.waiting_workers.get() == active
                && shared.starting.get() == 0
            {
                // every worker waits for a change only another worker could make
                for r in &runs {
                    r.abort.set(true);
                }
                shared.changed.notify_waiters();
                let stuck: Vec<&str> = runs.iter().map(|r| r.spec.name.as_str()).collect();
                rt.block_on(async {
                    for t in tasks.drain(..) {
                        let _ = t.await;
                    }
                });
                return Err(RunError::Setup {
                    job: stuck.join(", "),
                    msg: "the jobs wait for each other (e.g. more zones wanted open than max_open_zones allows); no I/O can progress".into(),
                });
            }
        }
        let results: Vec<_> = rt.block_on(async move {
            let mut out = Vec::new();
            for t in tasks {
                out.push(t.await);
            }
            out
        });
        shared.flows.borrow_mut().clear();
        for run in &runs {
            thread_number += 1;
            if run.spec.logs.any() {
                io_logs.push(crate::iolog::JobIoLog {
                    number: thread_number,
                    spec: run.spec.logs.clone(),
                    ios: std::mem::take(&mut run.st.borrow_mut().io_log),
                });
            }
        }
        let mut group_reports = Vec::new();
        for r in results {
            group_reports.push(r?);
        }
        reports.extend(merge_group(group_reports, gid));
    }
    Ok(RunReport {
        seed,
        jobs: reports,
        virtual_ns: handle.now_ns(),
        raid: devices.raid_stats(),
        interrupted: stopped,
        io_logs,
        notes,
    })
}

/// With group_reporting, the group's job reports merge into one (named after
/// the first job); otherwise each clone is reported on its own.
fn merge_group(group: Vec<(JobReport, bool)>, gid: u32) -> Vec<JobReport> {
    if group.first().is_some_and(|r| r.1) {
        let mut it = group.into_iter();
        let (mut merged, _) = it.next().expect("non-empty");
        for (r, _) in it {
            merged.jobs += r.jobs;
            merged.read.merge(&r.read);
            merged.write.merge(&r.write);
            merged.trim.merge(&r.trim);
            merged.sync.merge(&r.sync);
            for (k, v) in &r.zone_ops {
                merged.zone_ops.entry(k).or_default().merge(v);
            }
            merged.runtime_ns = merged.runtime_ns.max(r.runtime_ns);
            merged.zone_resets += r.zone_resets;
            if merged.error.is_none() {
                merged.error = r.error;
            }
        }
        merged.groupid = gid;
        vec![merged]
    } else {
        group
            .into_iter()
            .map(|(mut r, _)| {
                r.groupid = gid;
                r
            })
            .collect()
    }
}

/// Polls two futures, finishing with the first.
struct FirstOf<'a>(
    Pin<Box<dyn Future<Output = ()> + 'a>>,
    Pin<Box<dyn Future<Output = ()> + 'a>>,
);

impl Future for FirstOf<'_> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.as_mut().poll(cx).is_ready() || self.1.as_mut().poll(cx).is_ready() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// `untimed=1` jobs of a group: their writes, one I/O of each job clone in
/// turn, applied to their controllers without timing
/// (`Controller::write_untimed`), before the group's timed part. Each
/// clone's own offsets and sizes (`next_step`, so sequential positions and
/// random maps are the ones the timed job would use); the job's report has
/// the bytes and I/Os and no latencies.
fn run_untimed(runs: &[Rc<JobRun>], devices: &Devices) -> Result<(), RunError> {
    let mut live = Vec::new();
    for r in runs.iter().filter(|r| r.spec.untimed) {
        let fname = r.spec.filename.as_deref().unwrap_or_default();
        let ctrl = devices.controller(fname).ok_or_else(|| RunError::Setup {
            job: r.spec.name.clone(),
            msg: format!("untimed=1: {fname} is not an emulated controller"),
        })?;
        live.push((r, ctrl, r.spec.nsid.unwrap_or(1)));
    }
    while !live.is_empty() {
        let mut i = 0;
        while i < live.len() {
            let (r, ctrl, nsid) = &live[i];
            match r.next_step() {
                Step::Write { slba, bytes, .. } => {
                    ctrl.write_untimed(*nsid, slba, bytes / r.lba)
                        .map_err(|e| r.io_err(e))?;
                    let mut st = r.st.borrow_mut();
                    st.write.io_bytes += bytes;
                    st.write.total_ios += 1;
                    i += 1;
                }
                Step::Done => {
                    live.remove(i);
                }
                _ => {
                    return Err(RunError::Setup {
                        job: r.spec.name.clone(),
                        msg: "untimed=1: the job needs time (a wait or a non-write step)".into(),
                    })
                }
            }
        }
    }
    Ok(())
}

/// Largest write preconditioning and zone_fill issue (capped by MDTS).
const FILL_CHUNK_BYTES: u64 = 512 << 10;

/// State shared by every job of a run.
#[derive(Default)]
struct RunShared {
    /// Woken at every state change a waiting worker may care about.
    changed: Notify,
    active_workers: Cell<usize>,
    waiting_workers: Cell<usize>,
    /// Jobs still in their startdelay.
    starting: Cell<usize>,
    read_ios: Cell<u64>,
    write_ios: Cell<u64>,
    zbd: RefCell<BTreeMap<String, Rc<ZbdShared>>>,
    flows: RefCell<BTreeMap<u32, Rc<Flow>>>,
    /// `exitall`: a job of this group finished, so the group's jobs stop.
    exited_group: Cell<Option<u32>>,
}

impl RunShared {
    fn zbd_for(&self, key: &str, spec: &JobSpec, geo: &Geometry) -> Rc<ZbdShared> {
        let mut m = self.zbd.borrow_mut();
        let z = m
            .entry(key.to_string())
            .or_insert_with(|| {
                Rc::new(ZbdShared {
                    limit: Cell::new(if geo.max_open_zones == 0 {
                        u32::MAX
                    } else {
                        geo.max_open_zones
                    }),
                    open: Cell::new(0),
                })
            })
            .clone();
        if spec.max_open_zones != 0 {
            z.limit.set(z.limit.get().min(spec.max_open_zones));
        }
        z
    }

    fn flow(&self, id: u32) -> Rc<Flow> {
        self.flows.borrow_mut().entry(id).or_default().clone()
    }
}

/// Open-zone slots of one device, shared by the jobs writing it.
struct ZbdShared {
    limit: Cell<u32>,
    open: Cell<u32>,
}

/// One fio flow group (`flow_id`): jobs stall while their share of the
/// group's I/O count exceeds their share of the weights.
#[derive(Default)]
struct Flow {
    total_weight: Cell<u64>,
    active_jobs: Cell<u32>,
    counter: Cell<u64>,
}

impl Flow {
    fn join(&self, w: u64) {
        self.total_weight.set(self.total_weight.get() + w);
        self.active_jobs.set(self.active_jobs.get() + 1);
    }
    fn leave(&self, w: u64) {
        self.total_weight
            .set(self.total_weight.get().saturating_sub(w));
        self.active_jobs
            .set(self.active_jobs.get().saturating_sub(1));
    }
}

/// Data I/Os a job has issued and their bytes, in all and by direction:
/// the size, number_ios and rate limits count them.
#[derive(Debug, Clone, Copy, Default)]
struct Issued {
    bytes: u64,
    read_bytes: u64,
    write_bytes: u64,
    ios: u64,
    read_ios: u64,
    write_ios: u64,
}

impl Issued {
    /// One I/O of `bytes` in direction `dir` (trims count in the totals only).
    fn add(&mut self, dir: Ddir, bytes: u64) {
        self.bytes += bytes;
        self.ios += 1;
        match dir {
            Ddir::Read => {
                self.read_bytes += bytes;
                self.read_ios += 1;
            }
            Ddir::Write => {
                self.write_bytes += bytes;
                self.write_ios += 1;
            }
            Ddir::Trim => {}
        }
    }

    /// (bytes, I/Os) issued as reads (`read`) or as writes.
    fn of_dir(&self, read: bool) -> (u64, u64) {
        if read {
            (self.read_bytes, self.read_ios)
        } else {
            (self.write_bytes, self.write_ios)
        }
    }
}

/// A job's mutable state, shared by its workers.
struct JobState {
    rng: SimRng,
    /// Measured I/Os, kept only when the job writes fio logs.
    io_log: Vec<crate::iolog::LoggedIo>,
    /// verify=: what was written, and what failed its check.
    verify: VerifyState,
    issued: Issued,
    limit_bytes: u64,
    seq_pos: u64,
    /// Random order of the range's blocks (fio's random map; None with
    /// norandommap=1, a non-uniform distribution or for sequential jobs).
    randmap: Option<BlockPermutation>,
    /// `random_distribution` other than uniform: its block sampler.
    sampler: Option<BlockSampler>,
    /// Data I/Os issued and not yet completed (an fsync waits for them).
    inflight: u32,
    /// Writes since the last `fsync=N` flush.
    writes_since_sync: u64,
    sync: SyncState,
    /// Flushes (fsync=, end_fsync): fio's sync latencies.
    sync_stats: DirStats,
    /// The zones of the range, for zonemode=zbd and zone_op jobs.
    zbd: ZbdState,
    flow_count: u64,
    read: DirStats,
    write: DirStats,
    trim: DirStats,
    ops: BTreeMap<&'static str, DirStats>,
    resets: u64,
    last_done_ns: u64,
    error: Option<NvmeError>,
    ended: bool,
}

/// Where the job is with an `fsync=N` flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SyncState {
    Idle,
    /// Due: no new I/O until the I/O in flight is done and the flush ran.
    Due,
    Running,
}

/// The zone a zone_op worker takes next.
enum OpZone {
    Zone(usize),
    /// The next zone is still being worked on by another worker.
    Busy,
    Done,
}

/// What a worker does next (`slba` in LBAs, `bytes` the transfer's size).
enum Step {
    Read {
        slba: u64,
        bytes: u64,
    },
    /// A Dataset Management deallocate.
    Trim {
        slba: u64,
        bytes: u64,
    },
    /// A deallocate, then a write of the same blocks.
    TrimWrite {
        slba: u64,
        bytes: u64,
    },
    /// zonemode=zbd trim on a zoned namespace: a reset of this zone,
    /// reported as a trim of the zone (fio's zbd mode).
    TrimZone {
        zone: usize,
    },
    /// A flush (fsync=N), once nothing of the job is in flight.
    Sync,
    /// A write; `zone` is the index of its zone in a zbd job (None outside
    /// zonemode=zbd).
    Write {
        slba: u64,
        bytes: u64,
        zone: Option<usize>,
    },
    /// A zone append to the zone starting at `zslba`.
    Append {
        zslba: u64,
        bytes: u64,
        zone: usize,
    },
    /// Timed zone-management command on a zone, recorded under its key.
    Mgmt {
        cmd: ZoneSendCmd,
        key: &'static str,
        zone: usize,
    },
    Reset {
        zone: usize,
    },
    WaitChange,
    SleepUntil {
        at_ns: u64,
    },
    Done,
}

/// Where a job clone runs: its device, the device's geometry, open-zone
/// slots and zones (shared with the group's other jobs on it), and its byte
/// range.
struct JobPlace {
    target: Target,
    geo: Geometry,
    slots: Rc<ZbdShared>,
    zones: Rc<ZoneTable>,
    /// The job clone's number in its group.
    id: usize,
    /// First byte and length of the range, bytes.
    start: u64,
    len: u64,
}

struct JobRun {
    /// The job clone's number in its group (which job wrote a zone last).
    id: usize,
    spec: JobSpec,
    target: Target,
    geo: Geometry,
    handle: Handle,
    shared: Rc<RunShared>,
    /// The device's open-zone slots.
    slots: Rc<ZbdShared>,
    /// First byte and length of the job's range, bytes.
    start: u64,
    len: u64,
    lba: u64,
    st: RefCell<JobState>,
    started_ns: Cell<u64>,
    measure_from: Cell<u64>,
    deadline: Cell<u64>,
    abort: Cell<bool>,
    /// libaio: the submission latency model (None: no slat).
    slat: Cell<Option<host::Slat>>,
    /// A polled job's thread sharing its CPU (None: always on a CPU).
    cpu: Cell<Option<host::CpuShare>>,
    /// When the job's thread is done with its last submission (libaio: one
    /// thread makes its io_submit calls one after another).
    thread_free_ns: Cell<u64>,
}

fn op_key(op: ZoneOp) -> &'static str {
    match op {
        ZoneOp::Reset => "reset",
        ZoneOp::Finish => "finish",
        ZoneOp::Open => "open",
        ZoneOp::Close => "close",
    }
}

fn send(action: ZoneAction, slba: u64) -> ZoneSendCmd {
    ZoneSendCmd {
        action,
        slba,
        select_all: false,
    }
}

impl JobRun {
    fn new(
        spec: JobSpec,
        place: JobPlace,
        handle: Handle,
        shared: Rc<RunShared>,
        rng: SimRng,
    ) -> Rc<JobRun> {
        let JobPlace {
            target,
            geo,
            slots,
            zones,
            id,
            start,
            len,
        } = place;
        let lba = geo.lba_bytes;
        let limit_bytes = spec
            .io_size
            .map(|s| s.resolve(geo.capacity_bytes, geo.zone_bytes, lba))
            .unwrap_or(len)
            .saturating_mul(u64::from(spec.loops));
        let mut rng = rng;
        let blocks = (len / spec.bs.max(1)).max(1);
        let sampler = if spec.rw.is_random() {
            BlockSampler::new(&spec.random_distribution, blocks, spec.bs, &mut rng)
        } else {
            None
        };
        // (fio uses no random map with a non-uniform distribution)
        let randmap = (spec.rw.is_random() && !spec.norandommap && sampler.is_none())
            .then(|| BlockPermutation::new(blocks, &mut rng));
        Rc::new(JobRun {
            id,
            spec,
            target,
            geo,
            handle,
            shared,
            slots,
            start,
            len,
            lba,
            st: RefCell::new(JobState {
                rng,
                io_log: Vec::new(),
                verify: VerifyState::default(),
                issued: Issued::default(),
                limit_bytes,
                seq_pos: 0,
                randmap,
                sampler,
                inflight: 0,
                writes_since_sync: 0,
                sync: SyncState::Idle,
                sync_stats: DirStats::default(),
                zbd: ZbdState::new(zones),
                flow_count: 0,
                read: DirStats::default(),
                write: DirStats::default(),
                trim: DirStats::default(),
                ops: BTreeMap::new(),
                resets: 0,
                last_done_ns: 0,
                error: None,
                ended: false,
            }),
            started_ns: Cell::new(0),
            measure_from: Cell::new(0),
            deadline: Cell::new(u64::MAX),
            abort: Cell::new(false),
            slat: Cell::new(None),
            cpu: Cell::new(None),
            thread_free_ns: Cell::new(0),
        })
    }

    fn io_err(&self, err: NvmeError) -> RunError {
        RunError::Io {
            job: self.spec.name.clone(),
            err,
        }
    }

    fn zbd(&self) -> bool {
        self.spec.zonemode == ZoneMode::Zbd && self.target.zoned().is_some()
    }

    fn zbd_writes(&self) -> bool {
        self.zbd() && self.spec.rw.has_writes()
    }

    /// Several writes may be in flight in one zone: appends (the device
    /// picks the LBA), ZRWA writes, or mq-deadline (the host serialises).
    fn deep_zone_writes(&self) -> bool {
        self.spec.zone_append
            || self.spec.zrwa
            || effective_host_stack(&self.spec) == HostStack::IoUringMqDeadline
            || self.target.orders_zone_writes()
    }

    fn flow_weight(&self) -> u64 {
        u64::from(self.spec.flow.unsigned_abs())
    }

    fn zone_bytes(&self) -> u64 {
        self.geo.zone_bytes
    }

    fn zones_in_range(&self) -> (u64, usize) {
        let zb = self.zone_bytes().max(1);
        let first = self.start / zb;
        let n = self.len.div_ceil(zb) as usize;
        (first, n)
    }

    async fn report(&self) -> Result<Vec<zns_core::ZoneDescriptor>, RunError> {
        let dev = self.target.zoned().expect("zoned target");
        let (first, n) = self.zones_in_range();
        dev.report_zones(first * dev.config().zone_size_lbas, ReportFilter::All, n)
            .await
            .map_err(|e| self.io_err(e))
    }

    /// Writes zone `zslba` (written up to `wp`) to `target_lbas`, in
    /// max-transfer chunks at QD1. Untimed in the statistics.
    async fn fill_zone(&self, zslba: u64, wp: u64, target_lbas: u64) -> Result<(), RunError> {
        let chunk_lbas = (self.geo.max_transfer_bytes.min(FILL_CHUNK_BYTES) / self.lba).max(1);
        let buf = vec![0u8; (chunk_lbas * self.lba) as usize];
        let mut at = wp;
        let end = zslba + target_lbas;
        while at < end {
            let n = chunk_lbas.min(end - at);
            self.target
                .write(at, &buf[..(n * self.lba) as usize])
                .await
                .map_err(|e| self.io_err(e))?;
            at += n;
        }
        Ok(())
    }

    /// `precondition=fill|cold`: write the job's range (zones to zone_fill).
    async fn precondition(self: Rc<Self>) -> Result<(), RunError> {
        match &self.target {
            Target::Zoned(_) => {
                let cap = self.geo.zone_cap_bytes;
                let want = self.spec.zone_fill.resolve(cap, self.lba) / self.lba;
                for z in self.report().await? {
                    if z.wp_valid() && z.written_lbas() < want {
                        self.fill_zone(z.start_lba, z.write_pointer, want).await?;
                    }
                }
            }
            Target::Block(_) => {
                let chunk = self
                    .geo
                    .max_transfer_bytes
                    .clamp(self.lba, FILL_CHUNK_BYTES);
                let buf = vec![0u8; chunk as usize];
                let mut at = self.start;
                let end = self.start + self.len;
                while at < end {
                    let n = chunk.min(end - at);
                    self.target
                        .write(at / self.lba, &buf[..n as usize])
                        .await
                        .map_err(|e| self.io_err(e))?;
                    at += n;
                }
            }
        }
        if self.spec.precondition == Precondition::Cold {
            self.target.flush().await.map_err(|e| self.io_err(e))?;
        }
        Ok(())
    }

    fn done_fraction(&self) -> f64 {
        let st = self.st.borrow();
        if st.ended {
            return 1.0;
        }
        let now = self.handle.now_ns();
        let by_time = if self.deadline.get() != u64::MAX {
            let span = self
                .deadline
                .get()
                .saturating_sub(self.started_ns.get())
                .max(1);
            Some(now.saturating_sub(self.started_ns.get()) as f64 / span as f64)
        } else {
            None
        };
        let by_size = if self.spec.time_based {
            None
        } else if self.spec.zone_op.is_some() {
            Some(st.zbd.zone_op_next as f64 / st.zbd.len().max(1) as f64)
        } else {
            Some(st.issued.bytes as f64 / st.limit_bytes.max(1) as f64)
        };
        let f = match (by_time, by_size) {
            (Some(a), Some(b)) => a.max(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => 0.0,
        };
        f.clamp(0.0, 1.0)
    }

    async fn run(self: Rc<Self>) -> Result<(JobReport, bool), RunError> {
        let delay = self.spec.startdelay.as_nanos() as u64;
        if delay > 0 {
            let s = &self.shared.starting;
            s.set(s.get() + 1);
            self.handle.sleep(delay).await;
            s.set(s.get() - 1);
            self.shared.changed.notify_waiters();
        }
        let now = self.handle.now_ns();
        self.started_ns.set(now);
        let ramp = self.spec.ramp_time.as_nanos() as u64;
        self.measure_from.set(now + ramp);
        if let Some(rt) = self.spec.runtime {
            self.deadline.set(now + ramp + rt.as_nanos() as u64);
        }
        let result = self.clone().run_inner().await;
        if self.spec.exitall {
            self.shared.exited_group.set(Some(self.spec.group));
        }
        // release what the job holds, whatever happened
        {
            let mut st = self.st.borrow_mut();
            st.ended = true;
            let held = st.zbd.release_all();
            self.slots
                .open
                .set(self.slots.open.get().saturating_sub(held));
        }
        if self.spec.flow != 0 {
            self.shared
                .flow(self.spec.flow_id)
                .leave(self.flow_weight());
        }
        self.shared.changed.notify_waiters();
        let mut st = self.st.borrow_mut();
        // an I/O error ends the job, not the run (as in fio): its report
        // says what it did and carries the error
        let failed = match result {
            Err(RunError::Io { err, .. }) => Some(err),
            Err(e) => return Err(e),
            Ok(()) => st.error,
        };
        let error = match (failed, st.verify.take_failure()) {
            (Some(err), _) => Some(JobFailure {
                errno: err.status.linux_errno(),
                cause: FailureCause::Io(err),
            }),
            (None, Some((bad_blocks, first))) => Some(JobFailure {
                errno: EILSEQ,
                cause: FailureCause::Verify { bad_blocks, first },
            }),
            (None, None) => None,
        };
        let end = if self.deadline.get() != u64::MAX {
            st.last_done_ns.min(self.deadline.get())
        } else {
            st.last_done_ns
        };
        let report = JobReport {
            name: self.spec.name.clone(),
            groupid: self.spec.group,
            jobs: 1,
            read: std::mem::take(&mut st.read),
            write: std::mem::take(&mut st.write),
            trim: std::mem::take(&mut st.trim),
            sync: std::mem::take(&mut st.sync_stats),
            zone_ops: std::mem::take(&mut st.ops),
            runtime_ns: end.saturating_sub(self.measure_from.get()),
            zone_resets: st.resets,
            percentile_list: self.spec.percentile_list.clone(),
            clat_percentiles: self.spec.clat_percentiles,
            lat_percentiles: self.spec.lat_percentiles,
            iodepth: self.spec.effective_iodepth(),
            rw: self.spec.rw,
            bs: self.spec.bs,
            ioengine: self.spec.ioengine.as_str(),
            options: self.spec.options.clone(),
            error,
        };
        Ok((report, self.spec.group_reporting))
    }

    async fn run_inner(self: Rc<Self>) -> Result<(), RunError> {
        if self.zbd() || self.spec.zone_op.is_some() {
            let zones = self.report().await?;
            let wlimit = self
                .spec
                .zone_write_limit
                .map(|s| s.resolve(self.geo.capacity_bytes, self.geo.zone_bytes, self.lba));
            let mut st = self.st.borrow_mut();
            st.zbd
                .set_zones(self.zones_in_range().0 as usize, &zones, self.lba, wlimit);
            // the range's data (reads) or capacity (writes) bounds the job,
            // unless io_size / number_ios / time_based ask for more (wrapping)
            let wraps =
                self.spec.time_based || self.spec.io_size.is_some() || self.spec.number_ios > 0;
            // (each of fio's `loops` passes does what one pass would)
            let loops = u64::from(self.spec.loops);
            if self.spec.zone_op.is_none() && !wraps {
                if self.spec.rw == Rw::Read {
                    let readable: u64 = st.zbd.zones().iter().map(|z| z.readable * self.lba).sum();
                    st.limit_bytes = st.limit_bytes.min(readable.saturating_mul(loops));
                } else if self.spec.rw == Rw::Write && !self.spec.zrwa {
                    let writable: u64 =
                        st.zbd.zones().iter().map(|z| z.limit_lbas * self.lba).sum();
                    st.limit_bytes = st.limit_bytes.min(writable.saturating_mul(loops));
                }
            }
            let reads_only = !self.spec.rw.has_writes() && self.spec.zone_op.is_none();
            if reads_only && st.zbd.read_zones.is_empty() {
                return Err(RunError::Setup {
                    job: self.spec.name.clone(),
                    msg: "zonemode=zbd reads only below write pointers, and nothing is written in the job's range: write it first (e.g. a write job before it with stonewall) or set precondition=fill".into(),
                });
            }
        }
        let workers = self.worker_count();
        let mut handles = Vec::new();
        for _ in 0..workers {
            let me = self.clone();
            self.shared
                .active_workers
                .set(self.shared.active_workers.get() + 1);
            handles.push(self.handle.spawn(async move {
                let r = if me.spec.zone_op.is_some() {
                    me.clone().zone_op_worker().await
                } else {
                    me.clone().worker().await
                };
                me.shared
                    .active_workers
                    .set(me.shared.active_workers.get() - 1);
                me.shared.changed.notify_waiters();
                r
            }));
        }
        try_join_tasks(handles).await?;
        if self.spec.end_fsync && self.st.borrow().error.is_none() {
            self.timed_sync().await;
        }
        self.verify_pass().await
    }

    /// A flush, its latency recorded as fio's sync (fsync=, end_fsync).
    async fn timed_sync(&self) {
        let t0 = self.handle.now_ns();
        let r = self.target.flush().await;
        let now = self.handle.now_ns();
        let mut st = self.st.borrow_mut();
        match r {
            Ok(()) if t0 >= self.measure_from.get() => {
                st.last_done_ns = st.last_done_ns.max(now);
                let since = now - self.measure_from.get();
                st.sync_stats.add(0, now - t0, since);
            }
            Ok(()) => {}
            Err(e) => {
                st.error.get_or_insert(e);
            }
        }
    }

    /// A reset of zone `zi` the job issued completed (`ok`: it was done):
    /// the zone is empty again and free for the job's workers.
    fn zone_reset_done(&self, zi: usize, ok: bool) {
        let mut st = self.st.borrow_mut();
        st.zbd.zone_mut(zi).busy = false;
        if ok {
            let zslba = st.zbd.reset_done(zi);
            st.resets += 1;
            // what the zone held is gone: nothing to verify
            let from = zslba * self.lba;
            st.verify.forget(from, from + self.geo.zone_bytes);
        }
    }

    /// A data I/O of the job completed: a due flush may now run.
    fn io_done(&self) {
        let mut st = self.st.borrow_mut();
        st.inflight = st.inflight.saturating_sub(1);
        if st.inflight == 0 && st.sync == SyncState::Due {
            self.shared.changed.notify_waiters();
        }
    }

    fn worker_count(&self) -> u32 {
        let depth = self.spec.effective_iodepth().max(1);
        if self.zbd_writes() && !self.deep_zone_writes() && !self.spec.rw.has_reads() {
            // one write in flight per zone: as many workers as zones it may hold
            let zones = if self.spec.rw.is_random() {
                self.job_open_limit()
            } else {
                1
            };
            depth.min(zones.max(1))
        } else {
            depth
        }
    }

    fn job_open_limit(&self) -> u32 {
        let mut l = if self.spec.job_max_open_zones > 0 {
            self.spec.job_max_open_zones
        } else {
            self.slots.limit.get()
        };
        if self.spec.zrwa {
            // every open zone holds one of the device's ZRWA resources
            if let Some(z) = &self.geo.zrwa {
                l = l.min(z.resources);
            }
        }
        l.max(1)
    }

    /// Takes one of the device's open-zone slots, waiting for one to free.
    async fn acquire_slot(&self) {
        while self.slots.open.get() >= self.slots.limit.get() && !self.abort.get() {
            self.wait_change().await;
        }
        self.slots.open.set(self.slots.open.get() + 1);
    }

    fn release_slot(&self) {
        self.slots.open.set(self.slots.open.get().saturating_sub(1));
        self.shared.changed.notify_waiters();
    }

    // ----------------------------------------------------------------- zone ops

    /// Sleeps until some job's state changes (counted for deadlock detection).
    async fn wait_change(&self) {
        let w = &self.shared.waiting_workers;
        w.set(w.get() + 1);
        self.shared.changed.notified().await;
        w.set(w.get() - 1);
    }

    // ----------------------------------------------------------------- data I/O

    async fn worker(self: Rc<Self>) -> Result<(), RunError> {
        let mut buf = vec![0u8; max_block_bytes(&self.spec) as usize];
        let think = self.spec.thinktime.as_nanos() as u64;
        loop {
            let step = self.next_step();
            let (submit, slat) = match &step {
                Step::Read { .. } => self.host_submit(false, None).await,
                Step::Trim { .. }
                | Step::TrimWrite { .. }
                | Step::TrimZone { .. }
                | Step::Append { .. } => self.host_submit(true, None).await,
                Step::Write { zone, .. } => self.host_submit(true, *zone).await,
                _ => (self.handle.now_ns(), 0),
            };
            match step {
                Step::Done => return Ok(()),
                Step::WaitChange => {
                    self.wait_change().await;
                    continue;
                }
                Step::SleepUntil { at_ns } => {
                    self.handle.sleep_until(at_ns).await;
                    continue;
                }
                Step::Read { slba, bytes: n } => {
                    let r = self.target.read(slba, &mut buf[..n as usize]).await;
                    self.host_complete().await;
                    let ok = r.is_ok();
                    self.record(Ddir::Read, n, slba, submit, slat, r);
                    if let (true, Some(kind)) = (ok, self.spec.verify) {
                        self.check_verified(&buf[..n as usize], kind, slba * self.lba);
                        // a bad block ends the job, as in fio
                        if self.st.borrow().verify.failed() {
                            return Ok(());
                        }
                    }
                }
                Step::Trim { slba, bytes: n } => {
                    let r = self.target.discard(slba, n / self.lba).await;
                    self.host_complete().await;
                    self.record(Ddir::Trim, n, slba, submit, slat, r);
                }
                Step::TrimWrite { slba, bytes: n } => {
                    let r = self.target.discard(slba, n / self.lba).await;
                    self.host_complete().await;
                    let ok = r.is_ok();
                    self.record(Ddir::Trim, n, slba, submit, slat, r);
                    if ok {
                        let submit = self.handle.now_ns();
                        self.fill_verified(&mut buf[..n as usize], Some(slba * self.lba));
                        let r = self.target.write(slba, &buf[..n as usize]).await;
                        self.host_complete().await;
                        let ok = r.is_ok();
                        self.record(Ddir::Write, n, slba, submit, 0, r);
                        if ok {
                            self.remember_written(slba * self.lba, n);
                        }
                    }
                }
                Step::TrimZone { zone: zi } => {
                    let zslba = self.st.borrow().zbd.zone(zi).start_lba;
                    let dev = self.target.zoned().expect("zbd trims run on zoned targets");
                    let r = dev.zone_send(send(ZoneAction::Reset, zslba)).await;
                    self.host_complete().await;
                    self.zone_reset_done(zi, r.is_ok());
                    self.record(Ddir::Trim, self.geo.zone_bytes, zslba, submit, slat, r);
                    self.shared.changed.notify_waiters();
                }
                Step::Sync => {
                    self.timed_sync().await;
                    self.st.borrow_mut().sync = SyncState::Idle;
                    self.shared.changed.notify_waiters();
                    continue;
                }
                Step::Write {
                    slba,
                    bytes: n,
                    zone,
                } => {
                    self.fill_verified(&mut buf[..n as usize], Some(slba * self.lba));
                    let r = self.target.write(slba, &buf[..n as usize]).await;
                    if let Some(zi) = zone {
                        let st = self.st.borrow();
                        let mut z = st.zbd.zone_mut(zi);
                        // a completion after the request queued dispatches it
                        let now = self.handle.now_ns();
                        if z.sched_queued_at.is_some_and(|t| now > t) {
                            z.sched_queued_at = None;
                        }
                    }
                    self.host_complete().await;
                    let ok = r.is_ok();
                    self.record(Ddir::Write, n, slba, submit, slat, r);
                    if ok {
                        self.remember_written(slba * self.lba, n);
                    }
                    if let (true, Some(zi)) = (ok, zone) {
                        self.zone_write_done(zi, n / self.lba).await?;
                    }
                }
                Step::Append {
                    zslba,
                    bytes: n,
                    zone: zi,
                } => {
                    let dev = self.target.zoned().expect("zoned target");
                    self.fill_verified(&mut buf[..n as usize], None);
                    let r = dev
                        .append(zslba, &buf[..n as usize], zns_core::IoFlags::NONE)
                        .await;
                    // (logged at the LBA the device assigned)
                    let slba = *r.as_ref().unwrap_or(&zslba);
                    let r = r.map(|_| ());
                    self.host_complete().await;
                    let ok = r.is_ok();
                    self.record(Ddir::Write, n, slba, submit, slat, r);
                    if ok {
                        self.remember_written(slba * self.lba, n);
                        self.zone_write_done(zi, n / self.lba).await?;
                    }
                }
                Step::Mgmt { cmd, key, zone: zi } => {
                    let r = self.timed_mgmt(cmd, key).await;
                    self.st.borrow().zbd.zone_mut(zi).busy = false;
                    self.shared.changed.notify_waiters();
                    r?;
                    continue;
                }
                Step::Reset { zone: zi } => {
                    let zslba = self.st.borrow().zbd.zone(zi).start_lba;
                    let r = self
                        .timed_mgmt(send(ZoneAction::Reset, zslba), "reset")
                        .await;
                    self.zone_reset_done(zi, r.is_ok());
                    self.shared.changed.notify_waiters();
                    r?;
                    continue;
                }
            }
            // (only data I/O gets here: the other steps continued)
            self.io_done();
            if think > 0 {
                self.handle.sleep(think).await;
            }
        }
    }

    /// The host side before an I/O reaches the device: a polled job's thread
    /// must be on a CPU, and libaio's io_submit takes its time on the job's
    /// thread, one call after another. Returns when the I/O started (fio's
    /// start of lat) and its slat.
    async fn host_submit(&self, write: bool, zone: Option<usize>) -> (u64, u64) {
        let mut now = self.handle.now_ns();
        if let Some(cpu) = self.cpu.get() {
            let on = cpu.next_on(now);
            if on > now {
                self.handle.sleep_until(on).await;
                now = on;
            }
        }
        let Some(slat) = self.slat.get() else {
            return (now, 0);
        };
        let (before_ns, slat_ns) = {
            let st = self.st.borrow();
            let slat_of = match zone.map(|zi| st.zbd.zone_mut(zi)) {
                Some(mut z) => {
                    let r = slat.of(write, z.inflight, z.sched_queued_at.is_some());
                    if slat.queues(write, z.inflight) && z.sched_queued_at.is_none() {
                        z.sched_queued_at = Some(now);
                    }
                    r
                }
                None => slat.of(write, 0, false),
            };
            slat_of
        };
        let start = now.max(self.thread_free_ns.get());
        self.thread_free_ns.set(start + before_ns);
        if start + before_ns > now {
            self.handle.sleep_until(start + before_ns).await;
        }
        (start, slat_ns)
    }

    /// A polled job sees a completion only when its thread runs.
    async fn host_complete(&self) {
        if let Some(cpu) = self.cpu.get() {
            let now = self.handle.now_ns();
            let on = cpu.next_on(now);
            if on > now {
                self.handle.sleep_until(on).await;
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        dir: Ddir,
        bytes: u64,
        slba: u64,
        submit: u64,
        slat_ns: u64,
        res: Result<(), NvmeError>,
    ) {
        let now = self.handle.now_ns();
        match dir {
            Ddir::Read => self.shared.read_ios.set(self.shared.read_ios.get() + 1),
            Ddir::Write => self.shared.write_ios.set(self.shared.write_ios.get() + 1),
            Ddir::Trim => {}
        }
        if self.spec.flow != 0 {
            // flow-controlled jobs may now be under their share
            self.shared.changed.notify_waiters();
        }
        let mut st = self.st.borrow_mut();
        if let Err(e) = res {
            st.error.get_or_insert(e);
            return;
        }
        if submit < self.measure_from.get() {
            return;
        }
        st.last_done_ns = st.last_done_ns.max(now);
        let since = now - self.measure_from.get();
        let d = match dir {
            Ddir::Read => &mut st.read,
            Ddir::Write => &mut st.write,
            Ddir::Trim => &mut st.trim,
        };
        d.add_split(bytes, slat_ns, now - submit, since);
        if self.spec.logs.any() {
            st.io_log.push(crate::iolog::LoggedIo {
                done_ns: since,
                lat_ns: now - submit,
                dir,
                bytes,
                offset_bytes: slba * self.lba,
            });
        }
    }

    fn next_step(&self) -> Step {
        let now = self.handle.now_ns();
        let mut st = self.st.borrow_mut();
        if self.abort.get() || st.error.is_some() || now >= self.deadline.get() {
            return Step::Done;
        }
        if self.shared.exited_group.get() == Some(self.spec.group) {
            return Step::Done;
        }
        match st.sync {
            SyncState::Idle => {}
            SyncState::Due if st.inflight == 0 => {
                st.sync = SyncState::Running;
                return Step::Sync;
            }
            SyncState::Due | SyncState::Running => return Step::WaitChange,
        }
        if self.spec.number_ios > 0 && st.issued.ios >= self.spec.number_ios {
            return Step::Done;
        }
        // number_ios, when set, replaces the size as the stop condition
        if !self.spec.time_based && self.spec.number_ios == 0 && st.issued.bytes >= st.limit_bytes {
            return Step::Done;
        }
        // flow control: stall while this job is ahead of its weight share
        if self.spec.flow != 0 {
            let flow = self.shared.flow(self.spec.flow_id);
            if flow.active_jobs.get() > 1 && flow.counter.get() > 0 {
                let mine = st.flow_count as f64 / flow.counter.get() as f64;
                let share = self.flow_weight() as f64 / flow.total_weight.get().max(1) as f64;
                if mine > share {
                    return Step::WaitChange;
                }
            }
        }
        let mut dir = match self.spec.rw {
            Rw::Read | Rw::RandRead => Ddir::Read,
            // (trimwrite: counted as writes; the step trims first)
            Rw::Write | Rw::RandWrite | Rw::TrimWrite => Ddir::Write,
            Rw::Trim | Rw::RandTrim => Ddir::Trim,
            Rw::ReadWrite | Rw::RandRw => {
                if st.rng.below_u64(100) < u64::from(self.spec.rwmixread) {
                    Ddir::Read
                } else {
                    Ddir::Write
                }
            }
        };
        if dir == Ddir::Read
            && self.zbd()
            && st.zbd.read_zones.is_empty()
            && self.spec.rw.has_writes()
        {
            // nothing below a write pointer yet: write first
            dir = Ddir::Write;
        }
        // (trims have no rate limits: validate refuses rate= on trim jobs)
        let is_read = dir == Ddir::Read;
        // rate limits: the next I/O of a direction may not start before
        // start + issued / rate
        let started = self.started_ns.get();
        let (dir_bytes, dir_ios) = st.issued.of_dir(is_read);
        let mut not_before = 0u64;
        let pick = |r: &crate::job::RateSpec| if is_read { r.read } else { r.write };
        if let Some(rate) = self.spec.rate.as_ref().and_then(pick).filter(|&r| r > 0) {
            not_before =
                not_before.max(started + (dir_bytes as u128 * 1_000_000_000 / rate as u128) as u64);
        }
        if let Some(rate) = self
            .spec
            .rate_iops
            .as_ref()
            .and_then(pick)
            .filter(|&r| r > 0)
        {
            not_before =
                not_before.max(started + (dir_ios as u128 * 1_000_000_000 / rate as u128) as u64);
        }
        if not_before > now {
            return Step::SleepUntil {
                at_ns: not_before.min(self.deadline.get()),
            };
        }
        let bs = {
            let rng = &mut st.rng;
            self.spec
                .block_sizes
                .for_dir(dir)
                .pick(|n| rng.below_u64(n))
        };
        let step = if self.zbd() && dir == Ddir::Trim {
            // fio's zbd mode on a zoned device: a trim resets a whole zone,
            // the zones of the range in order (randtrim: at random)
            let nz = st.zbd.len();
            if nz == 0 {
                return Step::Done;
            }
            let zi = if self.spec.rw.is_random() {
                st.rng.below_u64(nz as u64) as usize
            } else {
                let zi = (st.seq_pos / self.geo.zone_bytes.max(1)) as usize % nz;
                st.seq_pos += self.geo.zone_bytes;
                zi
            };
            let mut z = st.zbd.zone_mut(zi);
            if z.busy || z.inflight > 0 {
                return Step::WaitChange;
            }
            z.busy = true;
            Step::TrimZone { zone: zi }
        } else if self.zbd() {
            if is_read {
                self.zbd_read(&mut st, bs)
            } else {
                self.zbd_write(&mut st, bs)
            }
        } else {
            // offsets are multiples of the job's smallest size (fio's
            // blockalign default); an I/O never runs past the range
            let align = self.spec.bs;
            let bs = bs.min(self.len.max(align));
            let blocks = (self.len / align).max(1);
            let off = if self.spec.rw.is_random() {
                let st = &mut *st;
                let off = match (st.sampler.as_mut(), st.randmap.as_mut()) {
                    (Some(sampler), _) => sampler.next(&mut st.rng) * align,
                    (None, Some(map)) => map.next(&mut st.rng) * align,
                    (None, None) => st.rng.below_u64(blocks) * align,
                };
                off.min(self.len.saturating_sub(bs))
            } else {
                if st.seq_pos + bs > self.len {
                    st.seq_pos = 0;
                }
                let o = st.seq_pos;
                st.seq_pos += bs;
                o
            };
            let slba = (self.start + off) / self.lba;
            match dir {
                Ddir::Read => Step::Read { slba, bytes: bs },
                Ddir::Write if self.spec.rw == Rw::TrimWrite => Step::TrimWrite { slba, bytes: bs },
                Ddir::Write => Step::Write {
                    slba,
                    bytes: bs,
                    zone: None,
                },
                Ddir::Trim => Step::Trim { slba, bytes: bs },
            }
        };
        let bytes = match step {
            Step::Read { bytes, .. }
            | Step::Write { bytes, .. }
            | Step::Append { bytes, .. }
            | Step::Trim { bytes, .. }
            | Step::TrimWrite { bytes, .. } => bytes,
            Step::TrimZone { .. } => self.geo.zone_bytes,
            _ => return step,
        };
        st.inflight += 1;
        if self.spec.fsync > 0 && dir == Ddir::Write {
            st.writes_since_sync += 1;
            if st.writes_since_sync >= self.spec.fsync {
                st.writes_since_sync = 0;
                st.sync = SyncState::Due;
            }
        }
        st.issued.add(dir, bytes);
        if self.spec.flow != 0 {
            st.flow_count += 1;
            let flow = self.shared.flow(self.spec.flow_id);
            flow.counter.set(flow.counter.get() + 1);
        }
        step
    }
}
