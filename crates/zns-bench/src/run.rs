//! Virtual-time execution of parsed fio jobs against emulated devices, with
//! fio-style statistics and JSON output (issue 3, first runner).
//!
//! Each job (and each of its `numjobs` clones) runs as runtime tasks keeping
//! `effective_iodepth()` I/Os outstanding. Stonewall groups run one after
//! another on the same runtime, so virtual time and device state carry over.
//! Latencies are submit→complete in virtual nanoseconds; there is no
//! submission latency, so `clat` and `lat` are equal.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::{json, Map, Value as Json};
use zns_core::{IoFlags, NvmeError, ReportFilter, ZoneAction, ZoneSendCmd, ZonedDevice};
use zns_device::{Controller, ControllerOptions, EmulatedZns, Profile, StoreKind};
use zns_sim::{Handle, Runtime, SimRng};

use crate::job::{HostStack, JobSpec, Rw, ZoneMode};

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("job {job}: {msg}")]
    Setup { job: String, msg: String },
    #[error("job {job}: I/O error: {err}")]
    Io { job: String, err: NvmeError },
}

/// Statistics of one direction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DirStats {
    pub io_bytes: u64,
    pub total_ios: u64,
    /// Per-I/O latencies (ns), sorted after the run.
    pub lats_ns: Vec<u64>,
}

impl DirStats {
    pub fn min(&self) -> u64 {
        self.lats_ns.first().copied().unwrap_or(0)
    }
    pub fn max(&self) -> u64 {
        self.lats_ns.last().copied().unwrap_or(0)
    }
    pub fn mean(&self) -> f64 {
        if self.lats_ns.is_empty() {
            return 0.0;
        }
        self.lats_ns.iter().map(|&l| l as f64).sum::<f64>() / self.lats_ns.len() as f64
    }
    pub fn stddev(&self) -> f64 {
        let n = self.lats_ns.len();
        if n < 2 {
            return 0.0;
        }
        let m = self.mean();
        let var = self
            .lats_ns
            .iter()
            .map(|&l| (l as f64 - m).powi(2))
            .sum::<f64>()
            / (n - 1) as f64;
        var.sqrt()
    }
    /// Nearest-rank percentile `p` (0..=100).
    pub fn percentile(&self, p: f64) -> u64 {
        let n = self.lats_ns.len();
        if n == 0 {
            return 0;
        }
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        self.lats_ns[rank.clamp(1, n) - 1]
    }
    fn merge(&mut self, other: &DirStats) {
        self.io_bytes += other.io_bytes;
        self.total_ios += other.total_ios;
        self.lats_ns.extend_from_slice(&other.lats_ns);
        self.lats_ns.sort_unstable();
    }
}

/// Result of one job (one clone, or a merged reporting group).
#[derive(Debug, Clone, PartialEq)]
pub struct JobReport {
    pub name: String,
    pub groupid: u32,
    /// Number of job clones merged into this report.
    pub jobs: u32,
    pub read: DirStats,
    pub write: DirStats,
    /// Measured virtual time (after ramp), ns.
    pub runtime_ns: u64,
    pub zone_resets: u64,
    pub percentile_list: Vec<f64>,
}

/// Result of a whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    pub seed: u64,
    pub jobs: Vec<JobReport>,
}

fn stack(h: Option<HostStack>) -> zns_sim::timing::HostStack {
    match h.unwrap_or(HostStack::Spdk) {
        HostStack::Spdk => zns_sim::timing::HostStack::Spdk,
        HostStack::IoUringNone => zns_sim::timing::HostStack::IoUringNone,
        HostStack::IoUringMqDeadline => zns_sim::timing::HostStack::IoUringMqDeadline,
    }
}

/// Runs `specs` (as parsed) in virtual time with `seed`.
pub fn run_jobs(specs: &[JobSpec], seed: u64) -> Result<RunReport, RunError> {
    for spec in specs {
        check_implemented(spec)?;
    }
    let mut rt = Runtime::new(seed);
    let handle = rt.handle();
    let mut devices: BTreeMap<String, EmulatedZns> = BTreeMap::new();
    let mut groups: BTreeMap<u32, Vec<&JobSpec>> = BTreeMap::new();
    for spec in specs {
        groups.entry(spec.group).or_default().push(spec);
    }
    let mut reports = Vec::new();
    for (gid, jobs) in groups {
        let mut tasks = Vec::new();
        for spec in jobs {
            let fname = spec.filename.clone().unwrap_or_else(|| "zn540".to_string());
            let setup = |msg: String| RunError::Setup {
                job: spec.name.clone(),
                msg,
            };
            if !devices.contains_key(&fname) {
                let profile = Profile::load(&fname).map_err(|e| setup(e.to_string()))?;
                let opts = ControllerOptions {
                    store: StoreKind::None,
                    host_stack: stack(spec.host_stack),
                };
                let ctrl =
                    Controller::new(&handle, profile, opts).map_err(|e| setup(e.to_string()))?;
                let ns = ctrl
                    .first_zoned()
                    .ok_or_else(|| setup(format!("{fname} has no zoned namespace")))?;
                devices.insert(fname.clone(), ns);
            }
            let dev = devices[&fname].clone();
            dev.controller().set_host_stack(stack(spec.host_stack));
            let cfg = dev.config().clone();
            let lba = u64::from(cfg.lba_bytes);
            let zone_bytes = cfg.zone_size_lbas * lba;
            let cap_bytes = zone_bytes * u64::from(cfg.zone_count);
            if spec.bs == 0 || spec.bs % lba != 0 {
                return Err(setup(format!(
                    "bs={} is not a multiple of the {lba}-byte block",
                    spec.bs
                )));
            }
            for clone in 0..spec.numjobs.max(1) {
                let mut start = spec.offset.resolve(cap_bytes, zone_bytes, lba)
                    + u64::from(clone) * spec.offset_increment.resolve(cap_bytes, zone_bytes, lba);
                if spec.zonemode == ZoneMode::Zbd {
                    start -= start % zone_bytes;
                } else {
                    start -= start % lba;
                }
                if start >= cap_bytes {
                    return Err(setup(format!(
                        "offset {start} is beyond the device ({cap_bytes} bytes)"
                    )));
                }
                let len = spec
                    .size
                    .map(|s| s.resolve(cap_bytes, zone_bytes, lba))
                    .unwrap_or(cap_bytes - start)
                    .min(cap_bytes - start);
                let rng = match spec.randseed {
                    Some(s) => SimRng::from_seed_u64(s.wrapping_add(u64::from(clone))),
                    None => handle.rng(),
                };
                let job = JobRun::new(spec.clone(), dev.clone(), handle.clone(), start, len, rng);
                tasks.push(handle.spawn(job.run()));
            }
        }
        let results = rt.block_on(async move {
            let mut out = Vec::new();
            for t in tasks {
                out.push(t.await);
            }
            out
        });
        let mut group_reports = Vec::new();
        for r in results {
            group_reports.push(r?);
        }
        if group_reports.first().is_some_and(|r| r.1) {
            let mut merged = group_reports[0].0.clone();
            for (r, _) in &group_reports[1..] {
                merged.jobs += r.jobs;
                merged.read.merge(&r.read);
                merged.write.merge(&r.write);
                merged.runtime_ns = merged.runtime_ns.max(r.runtime_ns);
                merged.zone_resets += r.zone_resets;
            }
            merged.groupid = gid;
            reports.push(merged);
        } else {
            reports.extend(group_reports.into_iter().map(|(mut r, _)| {
                r.groupid = gid;
                r
            }));
        }
    }
    Ok(RunReport {
        seed,
        jobs: reports,
    })
}

/// A zone of a zbd write job's range.
#[derive(Debug, Clone)]
struct ZoneCursor {
    start_lba: u64,
    cap_lbas: u64,
    /// Next LBA offset (relative to start) to hand out.
    next: u64,
    inflight: u32,
    resetting: bool,
}

struct State {
    rng: SimRng,
    issued_bytes: u64,
    limit_bytes: u64,
    seq_pos: u64,
    zones: Vec<ZoneCursor>,
    cur_zone: usize,
    read: DirStats,
    write: DirStats,
    resets: u64,
    last_done_ns: u64,
    error: Option<NvmeError>,
}

enum Step {
    Read(u64, u64),
    Write(u64, u64, usize),
    Append(u64, u64, usize),
    Reset(usize),
    Wait,
    Done,
}

struct JobRun {
    spec: JobSpec,
    dev: EmulatedZns,
    handle: Handle,
    start: u64,
    len: u64,
    lba: u64,
    state: RefCell<State>,
    measure_from: std::cell::Cell<u64>,
    deadline: std::cell::Cell<u64>,
}

impl JobRun {
    fn new(
        spec: JobSpec,
        dev: EmulatedZns,
        handle: Handle,
        start: u64,
        len: u64,
        rng: SimRng,
    ) -> Rc<JobRun> {
        let lba = u64::from(dev.config().lba_bytes);
        Rc::new(JobRun {
            spec,
            dev,
            handle,
            start,
            len,
            lba,
            state: RefCell::new(State {
                rng,
                issued_bytes: 0,
                limit_bytes: len,
                seq_pos: 0,
                zones: Vec::new(),
                cur_zone: 0,
                read: DirStats::default(),
                write: DirStats::default(),
                resets: 0,
                last_done_ns: 0,
                error: None,
            }),
            measure_from: std::cell::Cell::new(0),
            deadline: std::cell::Cell::new(u64::MAX),
        })
    }

    fn zbd_writes(&self) -> bool {
        self.spec.zonemode == ZoneMode::Zbd && self.spec.rw.has_writes()
    }

    /// Writes per zone may overlap (mq-deadline serialises them, appends need no order).
    fn deep_zone_writes(&self) -> bool {
        self.spec.zone_append || self.spec.host_stack == Some(HostStack::IoUringMqDeadline)
    }

    async fn run(self: Rc<Self>) -> Result<(JobReport, bool), RunError> {
        let now = self.handle.now_ns();
        let ramp = self.spec.ramp_time.as_nanos() as u64;
        self.measure_from.set(now + ramp);
        if let Some(rt) = self.spec.runtime {
            self.deadline.set(now + ramp + rt.as_nanos() as u64);
        }
        if self.zbd_writes() {
            let cfg = self.dev.config();
            let first = self.start / self.lba;
            let nz = self.len.div_ceil(cfg.zone_size_lbas * self.lba) as usize;
            let zones = self
                .dev
                .report_zones(first, ReportFilter::All, nz)
                .await
                .map_err(|err| RunError::Io {
                    job: self.spec.name.clone(),
                    err,
                })?;
            let mut st = self.state.borrow_mut();
            st.zones = zones
                .iter()
                .map(|z| ZoneCursor {
                    start_lba: z.start_lba,
                    cap_lbas: z.capacity_lbas,
                    next: if z.wp_valid() {
                        z.write_pointer - z.start_lba
                    } else {
                        z.capacity_lbas
                    },
                    inflight: 0,
                    resetting: false,
                })
                .collect();
            // Only the zones' capacity can be written without resets.
            let cap: u64 = st.zones.iter().map(|z| z.cap_lbas * self.lba).sum();
            if !self.spec.time_based {
                st.limit_bytes = st.limit_bytes.min(cap);
            }
        }
        let depth = if self.zbd_writes() && !self.deep_zone_writes() {
            1
        } else {
            self.spec.effective_iodepth().max(1)
        };
        let mut workers = Vec::new();
        for _ in 0..depth {
            let me = self.clone();
            workers.push(self.handle.spawn(async move { me.worker().await }));
        }
        for w in workers {
            w.await;
        }
        let mut st = self.state.borrow_mut();
        if let Some(err) = st.error {
            return Err(RunError::Io {
                job: self.spec.name.clone(),
                err,
            });
        }
        st.read.lats_ns.sort_unstable();
        st.write.lats_ns.sort_unstable();
        let report = JobReport {
            name: self.spec.name.clone(),
            groupid: self.spec.group,
            jobs: 1,
            read: std::mem::take(&mut st.read),
            write: std::mem::take(&mut st.write),
            runtime_ns: st.last_done_ns.saturating_sub(self.measure_from.get()),
            zone_resets: st.resets,
            percentile_list: self.spec.percentile_list.clone(),
        };
        Ok((report, self.spec.group_reporting))
    }

    fn next_step(&self) -> Step {
        let now = self.handle.now_ns();
        let mut st = self.state.borrow_mut();
        if st.error.is_some() || now >= self.deadline.get() {
            return Step::Done;
        }
        if !self.spec.time_based && st.issued_bytes >= st.limit_bytes {
            return Step::Done;
        }
        let bs = self.spec.bs;
        let is_read = match self.spec.rw {
            Rw::Read | Rw::RandRead => true,
            Rw::Write | Rw::RandWrite => false,
            Rw::ReadWrite | Rw::RandRw => st.rng.below_u64(100) < u64::from(self.spec.rwmixread),
        };
        if !is_read && self.spec.zonemode == ZoneMode::Zbd {
            let nz = st.zones.len();
            if nz == 0 {
                return Step::Done;
            }
            for _ in 0..=nz {
                let zi = st.cur_zone;
                let z = &mut st.zones[zi];
                if z.resetting {
                    return Step::Wait;
                }
                if z.next < z.cap_lbas {
                    let n = (bs / self.lba).min(z.cap_lbas - z.next);
                    let slba = z.start_lba + z.next;
                    z.next += n;
                    z.inflight += 1;
                    let zslba = z.start_lba;
                    st.issued_bytes += n * self.lba;
                    return if self.spec.zone_append {
                        Step::Append(zslba, n * self.lba, zi)
                    } else {
                        Step::Write(slba, n * self.lba, zi)
                    };
                }
                // Zone full: move on, resetting when the range wraps.
                let next = (zi + 1) % nz;
                st.cur_zone = next;
                let nzc = &mut st.zones[next];
                if nzc.next >= nzc.cap_lbas {
                    if nzc.inflight > 0 {
                        return Step::Wait;
                    }
                    nzc.resetting = true;
                    return Step::Reset(next);
                }
            }
            return Step::Wait;
        }
        let blocks = (self.len / bs).max(1);
        let off = if self.spec.rw.is_random() {
            st.rng.below_u64(blocks) * bs
        } else {
            let o = st.seq_pos;
            st.seq_pos = (st.seq_pos + bs) % (blocks * bs);
            o
        };
        st.issued_bytes += bs;
        let slba = (self.start + off) / self.lba;
        if is_read {
            Step::Read(slba, bs)
        } else {
            Step::Write(slba, bs, usize::MAX)
        }
    }

    fn record(&self, is_read: bool, bytes: u64, submit: u64, res: Result<(), NvmeError>) {
        let now = self.handle.now_ns();
        let mut st = self.state.borrow_mut();
        if let Err(e) = res {
            st.error.get_or_insert(e);
            return;
        }
        if submit < self.measure_from.get() {
            return;
        }
        st.last_done_ns = st.last_done_ns.max(now);
        let d = if is_read { &mut st.read } else { &mut st.write };
        d.io_bytes += bytes;
        d.total_ios += 1;
        d.lats_ns.push(now - submit);
    }

    async fn worker(self: Rc<Self>) {
        let bs = self.spec.bs as usize;
        let mut buf = vec![0u8; bs];
        loop {
            let step = self.next_step();
            let submit = self.handle.now_ns();
            match step {
                Step::Done => break,
                Step::Wait => {
                    self.handle.sleep(500).await;
                }
                Step::Read(slba, n) => {
                    let r = self.dev.read(slba, &mut buf[..n as usize]).await;
                    self.record(true, n, submit, r);
                }
                Step::Write(slba, n, zi) => {
                    let r = self
                        .dev
                        .write(slba, &buf[..n as usize], IoFlags::NONE)
                        .await;
                    self.zone_done(zi);
                    self.record(false, n, submit, r);
                }
                Step::Append(zslba, n, zi) => {
                    let r = self
                        .dev
                        .append(zslba, &buf[..n as usize], IoFlags::NONE)
                        .await
                        .map(|_| ());
                    self.zone_done(zi);
                    self.record(false, n, submit, r);
                }
                Step::Reset(zi) => {
                    let slba = self.state.borrow().zones[zi].start_lba;
                    let r = self
                        .dev
                        .zone_send(ZoneSendCmd {
                            action: ZoneAction::Reset,
                            slba,
                            select_all: false,
                        })
                        .await;
                    let mut st = self.state.borrow_mut();
                    match r {
                        Ok(()) => st.resets += 1,
                        Err(e) => {
                            st.error.get_or_insert(e);
                        }
                    }
                    let z = &mut st.zones[zi];
                    z.next = 0;
                    z.resetting = false;
                }
            }
        }
    }

    fn zone_done(&self, zi: usize) {
        if zi != usize::MAX {
            let mut st = self.state.borrow_mut();
            st.zones[zi].inflight -= 1;
        }
    }
}

fn lat_json(d: &DirStats, pcts: &[f64]) -> Json {
    let mut p = Map::new();
    for &q in pcts {
        p.insert(format!("{q:.6}"), json!(d.percentile(q)));
    }
    json!({
        "min": d.min(),
        "max": d.max(),
        "mean": d.mean(),
        "stddev": d.stddev(),
        "N": d.total_ios,
        "percentile": Json::Object(p),
    })
}

fn dir_json(d: &DirStats, runtime_ns: u64, pcts: &[f64]) -> Json {
    let secs = runtime_ns as f64 / 1e9;
    let (bw_bytes, iops) = if runtime_ns == 0 {
        (0, 0.0)
    } else {
        ((d.io_bytes as f64 / secs) as u64, d.total_ios as f64 / secs)
    };
    let runtime_ms = if d.total_ios == 0 {
        0
    } else {
        runtime_ns.div_ceil(1_000_000)
    };
    json!({
        "io_bytes": d.io_bytes,
        "io_kbytes": d.io_bytes / 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes / 1024,
        "iops": iops,
        "runtime": runtime_ms,
        "total_ios": d.total_ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0},
        "clat_ns": lat_json(d, pcts),
        "lat_ns": lat_json(d, pcts),
    })
}

impl RunReport {
    /// fio's `--output-format=json` layout.
    pub fn to_fio_json(&self) -> Json {
        let jobs: Vec<Json> = self
            .jobs
            .iter()
            .map(|j| {
                json!({
                    "jobname": j.name,
                    "groupid": j.groupid,
                    "error": 0,
                    "job_runtime": j.runtime_ns / 1_000_000,
                    "read": dir_json(&j.read, j.runtime_ns, &j.percentile_list),
                    "write": dir_json(&j.write, j.runtime_ns, &j.percentile_list),
                    "zone_resets": j.zone_resets,
                })
            })
            .collect();
        json!({
            "fio version": concat!("znskit-", env!("CARGO_PKG_VERSION")),
            "timestamp": 0,
            "global options": {"randseed": self.seed.to_string()},
            "jobs": jobs,
        })
    }
}

/// Options the parser accepts but this runner does not carry out yet are an
/// error naming the option, never silently ignored.
fn check_implemented(spec: &JobSpec) -> Result<(), RunError> {
    let not_yet = [
        ("rate", spec.rate.is_some()),
        ("rate_iops", spec.rate_iops.is_some()),
        ("flow", spec.flow != 0),
        ("max_open_zones", spec.max_open_zones != 0),
        ("job_max_open_zones", spec.job_max_open_zones != 0),
        ("zone_reset_threshold", spec.zone_reset_threshold != 0.0),
        ("zone_reset_frequency", spec.zone_reset_frequency != 0.0),
        ("zone_op", spec.zone_op.is_some()),
        (
            "precondition",
            spec.precondition != crate::job::Precondition::None,
        ),
    ];
    match not_yet.iter().find(|(_, set)| *set) {
        Some((name, _)) => Err(RunError::Setup {
            job: spec.name.clone(),
            msg: format!(
                "option `{name}` is accepted by the parser but not carried out by the runner yet"
            ),
        }),
        None => Ok(()),
    }
}
