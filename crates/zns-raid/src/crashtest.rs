//! The crash test of paper §6.6 (Table 1), in virtual time: sequential FUA
//! writes of random sizes (4 KiB – 512 KiB) filled with a 7-byte pattern keyed
//! by byte address, power cut on every member at a random instant, optionally
//! one member failed, then recovery (`RaidArray::open`). Checks: the reported
//! logical write pointer of every zone is at least the end of the last
//! acknowledged write, and the pattern is intact up to the reported write
//! pointer (read degraded when a member failed, and again after a rebuild onto
//! a spare). A trial is a seed: `run_trial(cfg, seed)` replays it exactly.
//!
//! Two procedures (docs/raid.md, "Crash tests"): by default the harness
//! knows every acknowledgement at its instant; with `CrashConfig::serial_log`
//! it is the paper's, whose workload printed each acknowledged end LBA to
//! the VM's serial console and whose "commit LBA" is the last line printed
//! before QEMU was killed.

use std::cell::RefCell;
use std::rc::Rc;

use rand::Rng;
use zns_core::{IoFlags, ReportFilter, ZoneState, ZonedConfig, ZonedDevice};
use zns_device::{Controller, ControllerOptions, Profile, StoreKind};
use zns_sim::sync::Semaphore;
use zns_sim::timing::HostStack;
use zns_sim::Runtime;

use crate::crash_params::{
    DEFAULT_MAX_CUT_MS, DEFAULT_MEMBERS, DEFAULT_QD, DEFAULT_TRIALS, DEFAULT_ZONES,
};
use crate::{Policy, RaidArray, RaidError, RaidOptions};

/// The repeating pattern (7 bytes: not a divisor of the block size).
pub const PATTERN: [u8; 7] = *b"ZRAID*7";

/// Fills `buf` with the pattern as it is at byte address `addr`.
pub fn fill_pattern(addr: u64, buf: &mut [u8]) {
    let tile = pattern_tile();
    let mut i = 0;
    while i < buf.len() {
        let phase = ((addr + i as u64) % 7) as usize;
        let k = (buf.len() - i).min(tile.len() - 7);
        buf[i..i + k].copy_from_slice(&tile[phase..phase + k]);
        i += k;
    }
}

/// The pattern repeated from phase 0, to fill and compare whole slices.
fn pattern_tile() -> &'static [u8] {
    static TILE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    TILE.get_or_init(|| (0..7 * 4096 + 7).map(|i| PATTERN[i % 7]).collect())
}

/// First byte of `buf` (at byte address `addr`) that breaks the pattern.
pub fn check_pattern(addr: u64, buf: &[u8]) -> Option<usize> {
    let tile = pattern_tile();
    let mut i = 0;
    while i < buf.len() {
        let phase = ((addr + i as u64) % 7) as usize;
        let k = (buf.len() - i).min(tile.len() - 7);
        let want = &tile[phase..phase + k];
        if buf[i..i + k] != *want {
            let j = buf[i..i + k]
                .iter()
                .zip(want)
                .position(|(x, y)| x != y)
                .unwrap_or(0);
            return Some(i + j);
        }
        i += k;
    }
    None
}

/// What a crash test runs.
#[derive(Debug, Clone)]
pub struct CrashConfig {
    pub policy: Policy,
    /// Fail one member (chosen by the seed) after power comes back.
    pub fail_device: bool,
    /// After a failure: rebuild onto a spare and check again.
    pub rebuild: bool,
    pub members: usize,
    /// Member device profile (needs a ZRWA; `crash_profile()` by default).
    pub profile: Profile,
    pub chunk_bytes: u64,
    /// Logical zones the workload writes, one after the other.
    pub zones: u32,
    /// Writes in flight (1 = each write waits for the previous one).
    pub queue_depth: usize,
    /// The power cut comes uniformly in [min_cut_ns, max_cut_ns].
    pub min_cut_ns: u64,
    pub max_cut_ns: u64,
    /// `RaidOptions::progress_per_write`: write pointers advance over a
    /// write's stripes only once the whole write completed (the paper's ZRAID).
    pub progress_per_write: bool,
    /// The paper's procedure: after each acknowledged write the workload
    /// prints its end LBA to a serial console, which takes this long, and
    /// issues its next write only then (a printk in the workload's loop
    /// writes the console in the caller's context); what counts as
    /// acknowledged is the last line printed in full before the cut.
    /// `None`: every acknowledgement counts at its instant.
    pub serial_log: Option<SerialLog>,
}

/// The console the paper's crash workload logged its commits to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SerialLog {
    /// Time to print one commit line.
    pub line_ns: u64,
}

impl SerialLog {
    /// The estimate for the paper's setup: a line of `[   12.345678] `
    /// (15 characters) and a message with the LBA (≈ 21), written to
    /// QEMU's emulated 16550 UART, which does not pace to a baud rate; per
    /// character the kernel's 8250 console polls the line status register
    /// and writes the transmit register, two port accesses, each a VM exit
    /// handled in QEMU (≈ 1 µs each: an estimate, not a measurement).
    pub const QEMU_16550: SerialLog = SerialLog {
        line_ns: 36 * 2 * 1_000,
    };
}

/// The member profile of the crash tests: the ZN540 (power-loss protected,
/// in-flight writes torn, ZRWA kept) with 8 zones of 4 MiB capacity, so that
/// trials are fast and the near-end corner cases come up often.
pub fn crash_profile() -> Profile {
    let base = Profile::builtin("zn540").expect("built-in profile");
    let set = |k: &str, v: &str| (k.to_string(), v.to_string());
    base.with_overrides(&[
        set("namespace.0.zone_count", "8"),
        set("namespace.0.zone_size_lbas", "2048"),
        set("namespace.0.zone_capacity_lbas", "1024"),
    ])
    .expect("valid overrides")
}

/// The geometry of a member profile's zoned namespace (None: it has none).
fn member_zoned_config(profile: &Profile) -> Option<&ZonedConfig> {
    profile
        .first_zoned()
        .and_then(|i| match &profile.namespaces[i] {
            zns_device::NamespaceProfile::Zoned(z) => Some(z),
            _ => None,
        })
}

/// The block size of a member profile's zoned namespace (None: it has
/// none), which a chunk must be a whole number of.
pub fn member_lba_bytes(profile: &Profile) -> Option<u64> {
    member_zoned_config(profile).map(|z| u64::from(z.lba_bytes))
}

/// The array options of a crash trial (and of its check before the trials).
fn crash_raid_options(chunk_bytes: u64, policy: Policy, progress_per_write: bool) -> RaidOptions {
    RaidOptions {
        chunk_bytes,
        policy,
        flush_before_advance: false,
        progress_per_write,
        ..RaidOptions::default()
    }
}

/// A crash test as a user gives it, in the units the front ends take
/// (`zns raid crashtest`'s options, a sweep point's parameters): checked
/// once here, then turned into a [`CrashConfig`] per policy.
#[derive(Debug, Clone)]
pub struct CrashShape {
    pub members: usize,
    pub chunk_bytes: u64,
    pub zones: u32,
    pub queue_depth: usize,
    pub max_cut_ms: f64,
    pub trials: u64,
    pub fail_device: bool,
    pub progress_per_write: bool,
    pub serial_log: Option<SerialLog>,
    /// Member device profile (`crash_profile()` unless the user named one).
    pub profile: Profile,
}

/// A [`CrashShape`] parameter out of range: `param` is its name in snake
/// case, as [`CrashParams`](crate::crash_params::CrashParams) names it
/// (each front end spells it its way: `--chunk`, `chunk =`),
/// `value` as given, `problem` what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{param} = {value}: {problem}")]
pub struct ShapeError {
    pub param: &'static str,
    pub value: String,
    pub problem: String,
}

impl CrashShape {
    /// The defaults of both front ends: 5 members, 64 KiB chunks, 3 zones,
    /// QD 1, power cuts up to 15 ms, 100 trials, on `crash_profile()`.
    pub fn new() -> CrashShape {
        CrashShape {
            members: DEFAULT_MEMBERS,
            chunk_bytes: crate::DEFAULT_CHUNK_BYTES,
            zones: DEFAULT_ZONES,
            queue_depth: DEFAULT_QD,
            max_cut_ms: DEFAULT_MAX_CUT_MS,
            trials: DEFAULT_TRIALS,
            fail_device: false,
            progress_per_write: false,
            serial_log: None,
            profile: crash_profile(),
        }
    }

    /// Checks every parameter; a chunk the array cannot be made with is a
    /// wrong argument, not data lost in every trial.
    pub fn check(&self) -> Result<(), ShapeError> {
        let lba_bytes = member_lba_bytes(&self.profile);
        let chunk_fits = |b: u64| self.chunk_bytes != 0 && self.chunk_bytes % b == 0;
        // (wrong?, parameter, value as given, what is wrong), first match wins
        let rules: [(bool, &'static str, String, String); 8] = [
            (
                self.members < 3,
                "members",
                self.members.to_string(),
                "RAID-5 needs at least 3".into(),
            ),
            (
                !(self.max_cut_ms.is_finite() && self.max_cut_ms > 0.1),
                "max_cut_ms",
                self.max_cut_ms.to_string(),
                "must be more than 0.1".into(),
            ),
            (
                self.trials == 0,
                "trials",
                self.trials.to_string(),
                "run at least one trial".into(),
            ),
            (
                self.queue_depth == 0,
                "qd",
                self.queue_depth.to_string(),
                "at least one write in flight".into(),
            ),
            (
                self.serial_log.is_some() && self.queue_depth != 1,
                "qd",
                self.queue_depth.to_string(),
                "the paper's procedure runs at QD 1 (its workload logs a write before the next)"
                    .into(),
            ),
            (
                self.zones == 0,
                "zones",
                self.zones.to_string(),
                "fill at least one zone".into(),
            ),
            (
                lba_bytes.is_none(),
                "profile",
                self.profile.name.clone(),
                "the member profile has no zoned namespace".into(),
            ),
            (
                lba_bytes.is_some_and(|b| !chunk_fits(b)),
                "chunk",
                self.chunk_bytes.to_string(),
                format!(
                    "the chunk must be a non-zero whole number of the members' {}-byte blocks",
                    lba_bytes.unwrap_or(0)
                ),
            ),
        ];
        if let Some((_, param, value, problem)) = rules.into_iter().find(|rule| rule.0) {
            return Err(ShapeError {
                param,
                value,
                problem,
            });
        }
        self.check_array()
    }

    /// The array the trials create, checked against the member profile as
    /// `RaidArray::create` checks it (the chunk against the ZRWA and its
    /// flush granularity, the zones, the limits), before any trial runs.
    fn check_array(&self) -> Result<(), ShapeError> {
        let Some(member) = member_zoned_config(&self.profile) else {
            return Ok(()); // refused above
        };
        let opts = crash_raid_options(self.chunk_bytes, Policy::WpLog, false);
        let e = match RaidArray::check_geometry(member, self.members, &opts) {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        let param = match e {
            RaidError::TooFewMembers { .. } => "members",
            RaidError::ChunkTooSmall { .. }
            | RaidError::ChunkTooLarge { .. }
            | RaidError::ChunkOverLimit { .. }
            | RaidError::ZoneTooSmall { .. } => "chunk",
            _ => "profile",
        };
        let value = match param {
            "members" => self.members.to_string(),
            "chunk" => self.chunk_bytes.to_string(),
            _ => self.profile.name.clone(),
        };
        let problem = format!("{e} (members: profile {})", self.profile.name);
        Err(ShapeError {
            param,
            value,
            problem,
        })
    }

    /// Whether write pointers advance per completed write: asked for, or
    /// implied by the paper's procedure (its workload logs each write).
    pub fn per_write_progress(&self) -> bool {
        self.progress_per_write || self.serial_log.is_some()
    }

    /// The checked shape as the configuration of one policy's trials.
    pub fn config(&self, policy: Policy) -> Result<CrashConfig, ShapeError> {
        self.check()?;
        let mut cfg = CrashConfig::new(policy);
        cfg.fail_device = self.fail_device;
        cfg.members = self.members;
        cfg.chunk_bytes = self.chunk_bytes;
        cfg.zones = self.zones;
        cfg.queue_depth = self.queue_depth;
        cfg.max_cut_ns = (self.max_cut_ms * 1e6) as u64;
        cfg.profile = self.profile.clone();
        cfg.progress_per_write = self.per_write_progress();
        cfg.serial_log = self.serial_log;
        Ok(cfg)
    }
}

impl Default for CrashShape {
    fn default() -> Self {
        CrashShape::new()
    }
}

impl CrashConfig {
    pub fn new(policy: Policy) -> CrashConfig {
        CrashConfig {
            policy,
            fail_device: false,
            rebuild: true,
            members: 5,
            profile: crash_profile(),
            chunk_bytes: crate::DEFAULT_CHUNK_BYTES,
            zones: 3,
            queue_depth: 1,
            min_cut_ns: 100_000,
            max_cut_ns: 15_000_000,
            progress_per_write: false,
            serial_log: None,
        }
    }

    /// The paper's procedure (§6.6, artifact `eval/table1`): ZRAID marks a
    /// write's progress when the whole write completed, the workload runs
    /// at QD 1 and logs each commit to `log`.
    pub fn paper_procedure(policy: Policy, log: SerialLog) -> CrashConfig {
        CrashConfig {
            progress_per_write: true,
            queue_depth: 1,
            serial_log: Some(log),
            ..CrashConfig::new(policy)
        }
    }
}

/// The result of one trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrialOutcome {
    pub seed: u64,
    /// Logical LBAs acknowledged (summed over zones).
    pub acked_lbas: u64,
    /// Logical LBAs below the recovered write pointers (summed over zones).
    pub reported_lbas: u64,
    /// Acknowledged bytes beyond a reported write pointer.
    pub lost_bytes: u64,
    pub failed_member: Option<usize>,
    /// Virtual instant of the power cut.
    pub cut_at_ns: u64,
    /// Virtual instant the workload stopped (finished or failed).
    pub workload_end_ns: u64,
    /// Why the trial failed (None = passed, or it could not run).
    pub failure: Option<String>,
    /// Why the trial could not run (its members or array could not be
    /// made): no write was issued, so it is no crash outcome and counts
    /// neither as passed nor as failed (`Summary::not_run`).
    pub not_run: Option<String>,
}

impl TrialOutcome {
    /// The trial ran and nothing acknowledged was lost or broken.
    pub fn passed(&self) -> bool {
        self.failure.is_none() && self.not_run.is_none()
    }
}

/// How a trial ended early: before its first write (not a crash outcome)
/// or after it (a failure of the policy).
enum TrialError {
    NotRun(String),
    Failed(String),
}

impl From<String> for TrialError {
    fn from(e: String) -> Self {
        TrialError::Failed(e)
    }
}

fn build_members(rt: &Runtime, cfg: &CrashConfig, count: usize) -> Result<Vec<Controller>, String> {
    (0..count)
        .map(|_| {
            Controller::new(
                &rt.handle(),
                cfg.profile.clone(),
                ControllerOptions {
                    store: StoreKind::Memory,
                    host_stack: HostStack::Spdk,
                },
            )
            .map_err(|e| e.to_string())
        })
        .collect()
}

fn devices(ctrls: &[Controller]) -> Result<Vec<Rc<dyn ZonedDevice>>, String> {
    ctrls
        .iter()
        .map(|c| {
            c.first_zoned()
                .map(|z| Rc::new(z) as Rc<dyn ZonedDevice>)
                .ok_or_else(|| "the member profile has no zoned namespace".to_string())
        })
        .collect()
}

/// Runs one trial.
pub fn run_trial(cfg: &CrashConfig, seed: u64) -> TrialOutcome {
    let mut out = TrialOutcome {
        seed,
        acked_lbas: 0,
        reported_lbas: 0,
        lost_bytes: 0,
        failed_member: None,
        cut_at_ns: 0,
        workload_end_ns: 0,
        failure: None,
        not_run: None,
    };
    match trial(cfg, seed, &mut out) {
        Ok(()) => {}
        Err(TrialError::NotRun(e)) => out.not_run = Some(e),
        Err(TrialError::Failed(e)) => out.failure = Some(e),
    }
    out
}

fn trial(cfg: &CrashConfig, seed: u64, out: &mut TrialOutcome) -> Result<(), TrialError> {
    let mut rt = Runtime::new(seed);
    let handle = rt.handle();
    let ctrls = build_members(&rt, cfg, cfg.members).map_err(TrialError::NotRun)?;
    let opts = crash_raid_options(cfg.chunk_bytes, cfg.policy, cfg.progress_per_write);
    let members = devices(&ctrls).map_err(TrialError::NotRun)?;
    let array = rt
        .block_on(RaidArray::create(&handle, members, opts))
        .map_err(|e| TrialError::NotRun(format!("create: {e}")))?;
    let lcfg = array.config().clone();
    let b = lcfg.lba_bytes as u64;
    let zones = cfg.zones.min(lcfg.zone_count);
    let mut rng = handle.rng();
    let cut_at = rng.gen_range(cfg.min_cut_ns..=cfg.max_cut_ns.max(cfg.min_cut_ns));
    let fail_index = rng.gen_range(0..cfg.members);
    out.cut_at_ns = cut_at;
    let end_ns = Rc::new(std::cell::Cell::new(0u64));
    // acked[z] = largest acknowledged end (zone-relative LBAs)
    let acked = Rc::new(RefCell::new(vec![0u64; zones as usize]));
    let workload = {
        let array = array.clone();
        let acked = acked.clone();
        let h = handle.clone();
        let mut rng = handle.rng();
        let qd = Rc::new(Semaphore::new(cfg.queue_depth.max(1)));
        let end_ns = end_ns.clone();
        let log_line_ns = cfg.serial_log.map(|l| l.line_ns);
        handle.spawn(async move {
            let mut tasks = Vec::new();
            'zones: for z in 0..zones {
                let start = z as u64 * lcfg.zone_size_lbas;
                let cap = lcfg.zone_capacity_lbas;
                let mut off = 0;
                while off < cap {
                    let nlb = rng.gen_range(1..=128u64).min(cap - off);
                    let mut buf = vec![0u8; (nlb * b) as usize];
                    fill_pattern((start + off) * b, &mut buf);
                    let permit = qd.acquire().await;
                    let array = array.clone();
                    let acked = acked.clone();
                    let slba = start + off;
                    let hh = h.clone();
                    let t = h.spawn(async move {
                        let r = array.write(slba, &buf, IoFlags::FUA).await;
                        let mut counted = r.is_ok();
                        if let (true, Some(line_ns)) = (counted, log_line_ns) {
                            // the commit line, printed before the next write;
                            // a line not out in full before the cut is not in
                            // the log
                            hh.sleep(line_ns).await;
                            counted = hh.now_ns() <= cut_at;
                        }
                        drop(permit);
                        if counted {
                            let a = &mut acked.borrow_mut()[z as usize];
                            *a = (*a).max(slba - start + nlb);
                        }
                        r.is_ok()
                    });
                    tasks.push(t);
                    off += nlb;
                    if tasks.len() > 64 {
                        let t = tasks.remove(0);
                        if !t.await {
                            break 'zones;
                        }
                    }
                }
            }
            for t in tasks {
                t.await;
            }
            end_ns.set(h.now_ns());
        })
    };
    let cutter = {
        let ctrls = ctrls.clone();
        let h = handle.clone();
        handle.spawn(async move {
            h.sleep_until(cut_at).await;
            for c in &ctrls {
                c.power_cut();
            }
        })
    };
    rt.block_on(async {
        cutter.await;
        workload.await;
    });
    drop(array);
    out.workload_end_ns = end_ns.get();
    for c in &ctrls {
        c.power_on();
    }
    if cfg.fail_device {
        ctrls[fail_index].fail();
        out.failed_member = Some(fail_index);
    }
    let acked = acked.borrow().clone();
    out.acked_lbas = acked.iter().sum();
    let array = rt
        .block_on(RaidArray::open(&handle, devices(&ctrls)?, opts))
        .map_err(|e| format!("recovery: {e}"))?;
    verify(&mut rt, &array, &acked, out, "after recovery")?;
    // writes continue at the recovered write pointers (stripe buffers reloaded)
    let mut acked2 = acked.clone();
    let descs = rt
        .block_on(array.report_zones(0, ReportFilter::All, acked.len()))
        .map_err(|e| format!("report after recovery: {e}"))?;
    for (z, d) in descs.iter().enumerate() {
        if d.state == ZoneState::Full {
            acked2[z] = lcfg.zone_capacity_lbas;
            continue;
        }
        if d.state == ZoneState::Empty {
            continue; // opening more zones could exceed the active limit
        }
        let mut wp = d.write_pointer;
        let end = d.start_lba + lcfg.zone_capacity_lbas;
        for _ in 0..3 {
            if wp >= end {
                break;
            }
            let nlb = rng.gen_range(1..=64u64).min(end - wp);
            let mut buf = vec![0u8; (nlb * b) as usize];
            fill_pattern(wp * b, &mut buf);
            rt.block_on(array.write(wp, &buf, IoFlags::FUA))
                .map_err(|e| format!("write after recovery, zone {z}: {e}"))?;
            wp += nlb;
        }
        acked2[z] = wp - d.start_lba;
    }
    let mut cont = out.clone();
    verify(&mut rt, &array, &acked2, &mut cont, "after writing on")?;
    rt.block_on(array.shutdown())
        .map_err(|e| format!("shutdown: {e}"))?;
    let array = if cfg.policy == Policy::Stripe {
        array // recovers whole stripes only, even after a clean shutdown
    } else {
        drop(array);
        let array = rt
            .block_on(RaidArray::open(&handle, devices(&ctrls)?, opts))
            .map_err(|e| format!("second recovery: {e}"))?;
        verify(&mut rt, &array, &acked2, &mut cont, "after a clean restart")?;
        array
    };
    let acked = acked2;
    if cfg.fail_device && cfg.rebuild {
        let spare = build_members(&rt, cfg, 1)?;
        let spare_dev = devices(&spare)?.remove(0);
        rt.block_on(array.rebuild(fail_index, spare_dev))
            .map_err(|e| format!("rebuild: {e}"))?;
        let mut again = out.clone();
        verify(&mut rt, &array, &acked, &mut again, "after rebuild")?;
    }
    Ok(())
}

/// Checks reported write pointers against the acknowledged ends and the
/// pattern below them.
fn verify(
    rt: &mut Runtime,
    array: &RaidArray,
    acked: &[u64],
    out: &mut TrialOutcome,
    when: &str,
) -> Result<(), String> {
    let lcfg = array.config().clone();
    let b = lcfg.lba_bytes as u64;
    let descs = rt
        .block_on(array.report_zones(0, ReportFilter::All, lcfg.zone_count as usize))
        .map_err(|e| format!("{when}: report zones: {e}"))?;
    out.reported_lbas = 0;
    out.lost_bytes = 0;
    let mut problems = Vec::new();
    for (z, &a) in acked.iter().enumerate() {
        let d = descs[z];
        let wp = if d.state == ZoneState::Full {
            lcfg.zone_capacity_lbas
        } else {
            d.write_pointer - d.start_lba
        };
        out.reported_lbas += wp;
        if wp < a {
            out.lost_bytes += (a - wp) * b;
            problems.push(format!(
                "zone {z}: reported WP {wp} < last acknowledged end {a} (lost {} KiB)",
                (a - wp) * b / 1024
            ));
        }
        let step = lcfg.max_transfer_lbas as u64;
        let mut x = 0;
        while x < wp {
            let n = step.min(wp - x);
            let mut buf = vec![0u8; (n * b) as usize];
            let slba = d.start_lba + x;
            rt.block_on(array.read(slba, &mut buf))
                .map_err(|e| format!("{when}: read zone {z} at {x}: {e}"))?;
            if let Some(i) = check_pattern(slba * b, &buf) {
                problems.push(format!(
                    "zone {z}: pattern broken at byte {} of the zone (WP {wp})",
                    x * b + i as u64
                ));
                break;
            }
            x += n;
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{when}: {}", problems.join("; ")))
    }
}

/// Totals of a run.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Trials counted: all but the passing ones in which no write was
    /// acknowledged before the power cut (the paper does not count runs
    /// whose commit LBA is 0; a failing trial always counts).
    pub trials: u64,
    /// Passing trials with nothing acknowledged, not counted in `trials`.
    pub not_counted: u64,
    pub failures: u64,
    /// Acknowledged bytes lost, summed over failing trials.
    pub lost_bytes: u64,
    pub failing: Vec<TrialOutcome>,
    /// Trials that could not run (no array, no write): in neither
    /// `trials` nor `failures`. A checked [`CrashShape`] makes none; a
    /// front end reports any as an error, never as a failure rate.
    pub not_run: u64,
    /// Why the first of them could not run.
    pub not_run_why: Option<String>,
}

/// One policy's crash-test result as the front ends print it (`zns raid
/// crashtest --json`'s `policies`, a sweep point's record).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PolicyReport {
    pub policy: &'static str,
    pub trials: u64,
    pub not_counted: u64,
    pub failures: u64,
    pub failure_rate: f64,
    pub lost_bytes: u64,
    pub mean_loss_bytes: f64,
    pub first_failing_seed: Option<u64>,
    pub failing: Vec<FailingTrial>,
    pub not_run: u64,
    pub not_run_why: Option<String>,
}

/// A failing trial in a [`PolicyReport`]: its seed replays it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FailingTrial {
    pub seed: u64,
    pub failed_member: Option<usize>,
    pub lost_bytes: u64,
    pub why: Option<String>,
}

impl Summary {
    pub fn failure_rate(&self) -> f64 {
        if self.trials == 0 {
            0.0
        } else {
            self.failures as f64 / self.trials as f64
        }
    }
    /// Mean loss per failing trial, in bytes.
    pub fn mean_loss_bytes(&self) -> f64 {
        if self.failures == 0 {
            0.0
        } else {
            self.lost_bytes as f64 / self.failures as f64
        }
    }

    /// The summary of `policy`'s trials as the front ends print it.
    pub fn report(&self, policy: Policy) -> PolicyReport {
        PolicyReport {
            policy: policy.name(),
            trials: self.trials,
            not_counted: self.not_counted,
            failures: self.failures,
            failure_rate: self.failure_rate(),
            lost_bytes: self.lost_bytes,
            mean_loss_bytes: self.mean_loss_bytes(),
            first_failing_seed: self.failing.first().map(|o| o.seed),
            failing: self
                .failing
                .iter()
                .map(|o| FailingTrial {
                    seed: o.seed,
                    failed_member: o.failed_member,
                    lost_bytes: o.lost_bytes,
                    why: o.failure.clone(),
                })
                .collect(),
            not_run: self.not_run,
            not_run_why: self.not_run_why.clone(),
        }
    }

    /// Trials that ran (counted, not counted and not run alike).
    pub fn ran(&self) -> u64 {
        self.trials + self.not_counted + self.not_run
    }

    /// An error naming why trials could not run, if any did not: their
    /// outcome says nothing about the policy.
    pub fn not_run_error(&self, policy: Policy) -> Option<String> {
        (self.not_run > 0).then(|| {
            format!(
                "{} of {} {} trials could not run: {}",
                self.not_run,
                self.ran(),
                policy.name(),
                self.not_run_why.as_deref().unwrap_or("")
            )
        })
    }
}

/// Runs `trials` trials with seeds `seed, seed + 1, …`; `each` sees every
/// outcome. Passing trials with nothing acknowledged are not counted
/// (`Summary::not_counted`).
pub fn run(
    cfg: &CrashConfig,
    trials: u64,
    seed: u64,
    each: &mut dyn FnMut(&TrialOutcome),
) -> Summary {
    run_until(cfg, trials, seed, each, &|| false)
}

/// [`run`], asking `stop` before each trial: when it says so, the trials
/// run so far are the summary (`Summary::ran`); seeds continue at
/// `seed + ran`.
pub fn run_until(
    cfg: &CrashConfig,
    trials: u64,
    seed: u64,
    each: &mut dyn FnMut(&TrialOutcome),
    stop: &dyn Fn() -> bool,
) -> Summary {
    let mut s = Summary::default();
    for t in 0..trials {
        if stop() {
            break;
        }
        let o = run_trial(cfg, seed.wrapping_add(t));
        if let Some(why) = &o.not_run {
            s.not_run += 1;
            s.not_run_why.get_or_insert_with(|| why.clone());
            each(&o);
            continue;
        }
        if o.passed() && o.acked_lbas == 0 {
            s.not_counted += 1;
            each(&o);
            continue;
        }
        s.trials += 1;
        if !o.passed() {
            s.failures += 1;
            s.lost_bytes += o.lost_bytes;
            s.failing.push(o.clone());
        }
        each(&o);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shape_names_the_parameter_it_cannot_run_with() {
        let ok = CrashShape::new();
        assert_eq!(ok.check(), Ok(()));
        let cfg = ok.config(Policy::Chunk).unwrap();
        assert_eq!((cfg.members, cfg.chunk_bytes, cfg.zones), (5, 64 << 10, 3));
        assert_eq!((cfg.queue_depth, cfg.max_cut_ns), (1, 15_000_000));
        let with = |edit: fn(&mut CrashShape)| {
            let mut shape = CrashShape::new();
            edit(&mut shape);
            shape
        };
        let paper = with(|s| s.serial_log = Some(SerialLog::QEMU_16550));
        assert!(paper.config(Policy::WpLog).unwrap().progress_per_write);
        let bad = [
            (with(|s| s.members = 2), "members"),
            (with(|s| s.chunk_bytes = 0 << 10), "chunk"),
            (with(|s| s.chunk_bytes = 3 << 10), "chunk"),
            (with(|s| s.chunk_bytes = u64::MAX), "chunk"),
            // whole blocks, but not what the array can be made with: below
            // 2 × ZRWAFG (32 KiB on the ZN540), above half its 1 MiB ZRWA
            (with(|s| s.chunk_bytes = 16 << 10), "chunk"),
            (with(|s| s.chunk_bytes = 48 << 10), "chunk"),
            (with(|s| s.chunk_bytes = 1024 << 10), "chunk"),
            (with(|s| s.zones = 0), "zones"),
            (with(|s| s.queue_depth = 0), "qd"),
            (
                with(|s| {
                    s.serial_log = Some(SerialLog::QEMU_16550);
                    s.queue_depth = 4;
                }),
                "qd",
            ),
            (with(|s| s.max_cut_ms = f64::NAN), "max_cut_ms"),
            (with(|s| s.trials = 0), "trials"),
        ];
        for (shape, param) in bad {
            let e = shape.check().unwrap_err();
            assert_eq!(e.param, param, "{e}");
            assert_eq!(shape.config(Policy::WpLog).unwrap_err(), e);
        }
    }

    #[test]
    fn a_chunk_the_array_refuses_names_the_granularity_in_kib() {
        let shape = CrashShape {
            chunk_bytes: 16 << 10,
            ..CrashShape::new()
        };
        let e = shape.config(Policy::WpLog).unwrap_err();
        assert!(e.problem.contains("2 × ZRWAFG = 32 KiB"), "{e}");
        for kib in [32, 64, 256] {
            let ok = CrashShape {
                chunk_bytes: kib << 10,
                ..CrashShape::new()
            };
            assert_eq!(ok.check(), Ok(()), "{kib} KiB");
        }
    }

    #[test]
    fn trials_that_cannot_build_the_array_are_not_run_not_failed() {
        // a configuration no front end lets through (the shape check
        // refuses it), run directly: no trial is a crash outcome
        let mut cfg = CrashConfig::new(Policy::WpLog);
        cfg.chunk_bytes = 16 << 10;
        let s = run(&cfg, 3, 1, &mut |o| {
            assert!(!o.passed() && o.failure.is_none(), "{o:?}");
        });
        assert_eq!(
            (s.not_run, s.trials, s.failures, s.not_counted),
            (3, 0, 0, 0)
        );
        assert_eq!(s.failure_rate(), 0.0);
        let r = s.report(Policy::WpLog);
        assert_eq!((r.not_run, r.failures), (3, 0));
        let e = s.not_run_error(Policy::WpLog).unwrap();
        assert!(
            e.starts_with("3 of 3 wplog trials could not run: create: chunk"),
            "{e}"
        );
        // a configuration that runs has none
        let ok = run(&CrashConfig::new(Policy::WpLog), 2, 1, &mut |_| {});
        assert_eq!((ok.not_run, ok.not_run_error(Policy::WpLog)), (0, None));
    }

    #[test]
    fn a_report_carries_the_summary_and_each_failing_seed() {
        let failing = |seed, lost_bytes| TrialOutcome {
            seed,
            acked_lbas: 8,
            reported_lbas: 4,
            lost_bytes,
            failed_member: Some(1),
            cut_at_ns: 0,
            workload_end_ns: 0,
            failure: Some("lost".into()),
            not_run: None,
        };
        let s = Summary {
            trials: 4,
            not_counted: 1,
            failures: 2,
            lost_bytes: 12288,
            failing: vec![failing(7, 4096), failing(9, 8192)],
            not_run: 0,
            not_run_why: None,
        };
        let r = s.report(Policy::Stripe);
        assert_eq!(
            (r.policy, r.trials, r.not_counted, r.failures),
            ("stripe", 4, 1, 2)
        );
        assert_eq!((r.failure_rate, r.mean_loss_bytes), (0.5, 6144.0));
        assert_eq!(r.first_failing_seed, Some(7));
        assert_eq!(r.failing[1].seed, 9);
        assert_eq!(r.failing[1].why.as_deref(), Some("lost"));
    }

    #[test]
    fn the_pattern_is_keyed_by_byte_address_and_a_wrong_byte_is_found() {
        for (addr, len) in [(0u64, 1usize), (5, 100_000), (4096 * 3 + 1, 70_000)] {
            let mut buf = vec![0u8; len];
            fill_pattern(addr, &mut buf);
            for (i, b) in buf.iter().enumerate() {
                assert_eq!(*b, PATTERN[((addr + i as u64) % 7) as usize]);
            }
            assert_eq!(check_pattern(addr, &buf), None);
            assert_eq!(check_pattern(addr + 1, &buf), Some(0));
            let at = len * 2 / 3;
            buf[at] ^= 1;
            assert_eq!(check_pattern(addr, &buf), Some(at));
        }
    }
}
