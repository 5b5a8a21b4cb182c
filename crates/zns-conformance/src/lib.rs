//! One conformance suite for every `ZonedDevice`: the same named cases run
//! against the emulated device, a RAID array, the Linux backend on QEMU's
//! NVMe ZNS namespaces and the Linux backend on a served ublk device
//! (docs/conformance.md lists the cases and where each device runs them).
//!
//! A case is a function over `(&mut Runtime, &dyn ZonedDevice,
//! &Capabilities)` returning `Ok(())` or `Err(why)`; it starts with every
//! zone empty (the runner resets all zones before each case and checks that
//! they are) and asserts the behaviour and the exact NVMe status that
//! docs/semantics.md specifies (QEMU's order of checks, auto-close of
//! implicitly opened zones included). What a device or its transport cannot
//! carry — zone append, ZRWA, select-all open/close/finish through the block
//! layer — it declares in `Capabilities`; a case that needs it is then
//! reported as skipped with the reason, never passed silently. So is a case
//! the device's geometry leaves no room for (too few zones, no zone limit
//! below the zone count).
//!
//! The suite runs in the caller's runtime: it reads no wall time and spawns
//! nothing (a device that is OS-facing may, behind its own futures).

mod cases;
mod check;

use std::fmt;

use zns_core::{ReportFilter, ZoneAction, ZoneSendCmd, ZonedConfig, ZonedDevice};
use zns_sim::Runtime;

pub use check::pattern;

/// What a case does with a device: `Ok(())` or why it failed.
pub type CaseFn = fn(&mut Runtime, &dyn ZonedDevice, &Capabilities) -> Result<(), String>;

/// Why a case cannot run on a device (`Some(reason)`: reported as skipped).
pub type SkipFn = fn(&ZonedConfig, &Capabilities) -> Option<String>;

/// One named case of the suite.
#[derive(Clone, Copy)]
pub struct Case {
    pub name: &'static str,
    /// One line: what the case checks.
    pub about: &'static str,
    pub skip: SkipFn,
    pub run: CaseFn,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case").field("name", &self.name).finish()
    }
}

/// What the device declares it carries (and, optionally, the geometry it is
/// expected to have).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// Zone Append reaches the device and returns the LBA it wrote.
    pub zone_append: bool,
    /// Open with ZRWAA, writes inside the ZRWA and explicit ZRWA flushes
    /// reach the device.
    pub zrwa: bool,
    /// Select-all Open, Close and Finish reach the device (reset-all is
    /// required of every device: the runner uses it between cases).
    pub select_all: bool,
    /// Geometry the device must report; `None` checks only consistency.
    pub expected: Option<ExpectedGeometry>,
}

impl Capabilities {
    /// The defaults a device's configuration implies: zone append when the
    /// configured append limit (ZASL) is non-zero, ZRWA when the
    /// configuration has one, select-all, no expected geometry. (A device
    /// whose ZASL is 0, meaning "same as MDTS", that does carry append must
    /// say so: `.with_zone_append(true)`.)
    pub fn declared_by(cfg: &ZonedConfig) -> Capabilities {
        Capabilities {
            zone_append: cfg.zone_append_limit_lbas != 0,
            zrwa: cfg.zrwa.is_some(),
            select_all: true,
            expected: None,
        }
    }

    pub fn with_zone_append(mut self, on: bool) -> Self {
        self.zone_append = on;
        self
    }

    pub fn with_zrwa(mut self, on: bool) -> Self {
        self.zrwa = on;
        self
    }

    pub fn with_select_all(mut self, on: bool) -> Self {
        self.select_all = on;
        self
    }

    pub fn expecting(mut self, expected: ExpectedGeometry) -> Self {
        self.expected = Some(expected);
        self
    }
}

/// Geometry and limits a device is expected to report; `None` fields are
/// not checked. The ZRWA fields are checked only when ZRWA is a capability.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExpectedGeometry {
    pub lba_bytes: Option<u32>,
    pub zone_count: Option<u32>,
    pub zone_size_lbas: Option<u64>,
    pub zone_capacity_lbas: Option<u64>,
    pub max_open_zones: Option<u32>,
    pub max_active_zones: Option<u32>,
    pub zrwa_size_lbas: Option<u64>,
    pub zrwa_flush_granularity_lbas: Option<u64>,
    pub zrwa_resources: Option<u32>,
}

impl ExpectedGeometry {
    /// Everything `cfg` says (e.g. a profile's namespace): the device must
    /// report the same.
    pub fn of(cfg: &ZonedConfig) -> ExpectedGeometry {
        ExpectedGeometry {
            lba_bytes: Some(cfg.lba_bytes),
            zone_count: Some(cfg.zone_count),
            zone_size_lbas: Some(cfg.zone_size_lbas),
            zone_capacity_lbas: Some(cfg.zone_capacity_lbas),
            max_open_zones: Some(cfg.max_open_zones),
            max_active_zones: Some(cfg.max_active_zones),
            zrwa_size_lbas: cfg.zrwa.map(|z| z.size_lbas),
            zrwa_flush_granularity_lbas: cfg.zrwa.map(|z| z.flush_granularity_lbas),
            zrwa_resources: cfg.zrwa.map(|z| z.resources),
        }
    }
}

/// The suite's cases, in the order the runner runs them.
pub fn cases() -> &'static [Case] {
    cases::ALL
}

/// How one case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    Failed(String),
    Skipped(String),
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseResult {
    pub name: &'static str,
    pub outcome: Outcome,
}

/// The results of a run, one per selected case, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub results: Vec<CaseResult>,
}

impl Report {
    fn count(&self, f: impl Fn(&Outcome) -> bool) -> usize {
        self.results.iter().filter(|r| f(&r.outcome)).count()
    }
    pub fn passed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Passed))
    }
    pub fn failed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Failed(_)))
    }
    pub fn skipped(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Skipped(_)))
    }
    /// The outcome of the case named `name`, if it was selected.
    pub fn outcome(&self, name: &str) -> Option<&Outcome> {
        self.results
            .iter()
            .find(|r| r.name == name)
            .map(|r| &r.outcome)
    }
    /// Names of the skipped cases.
    pub fn skipped_names(&self) -> Vec<&'static str> {
        self.results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Skipped(_)))
            .map(|r| r.name)
            .collect()
    }
    /// Panics with the whole report when a case failed or none ran.
    pub fn assert_passed(&self, device: &str) {
        assert!(
            self.failed() == 0 && self.passed() > 0,
            "conformance of {device}:\n{self}"
        );
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for r in &self.results {
            match &r.outcome {
                Outcome::Passed => writeln!(f, "  pass  {}", r.name)?,
                Outcome::Failed(why) => writeln!(f, "  FAIL  {}: {why}", r.name)?,
                Outcome::Skipped(why) => writeln!(f, "  skip  {}: {why}", r.name)?,
            }
        }
        write!(
            f,
            "  {} passed, {} failed, {} skipped",
            self.passed(),
            self.failed(),
            self.skipped()
        )
    }
}

/// Runs every case whose name `select` accepts, resetting all zones before
/// each (and after the last), and reports each one.
pub fn run(
    rt: &mut Runtime,
    dev: &dyn ZonedDevice,
    caps: &Capabilities,
    select: impl Fn(&str) -> bool,
) -> Report {
    let mut report = Report::default();
    for case in cases().iter().filter(|c| select(c.name)) {
        let outcome = if let Some(why) = (case.skip)(dev.config(), caps) {
            Outcome::Skipped(why)
        } else {
            match reset_all_and_check(rt, dev).and_then(|()| (case.run)(rt, dev, caps)) {
                Ok(()) => Outcome::Passed,
                Err(why) => Outcome::Failed(why),
            }
        };
        report.results.push(CaseResult {
            name: case.name,
            outcome,
        });
    }
    if let Err(why) = reset_all_and_check(rt, dev) {
        report.results.push(CaseResult {
            name: "reset after the suite",
            outcome: Outcome::Failed(why),
        });
    }
    report
}

/// Runs the whole suite.
pub fn run_all(rt: &mut Runtime, dev: &dyn ZonedDevice, caps: &Capabilities) -> Report {
    run(rt, dev, caps, |_| true)
}

/// Select-all reset, then every zone must be reported empty.
fn reset_all_and_check(rt: &mut Runtime, dev: &dyn ZonedDevice) -> Result<(), String> {
    rt.block_on(dev.zone_send(ZoneSendCmd {
        action: ZoneAction::Reset,
        slba: 0,
        select_all: true,
    }))
    .map_err(|e| format!("reset all zones before the case: {e}"))?;
    let zones = rt
        .block_on(dev.report_zones(0, ReportFilter::All, usize::MAX))
        .map_err(|e| format!("report after reset all: {e}"))?;
    match zones.iter().find(|z| !check::is_empty(z)) {
        Some(z) => Err(format!("after reset all, zone {z:?} is not empty")),
        None => Ok(()),
    }
}
