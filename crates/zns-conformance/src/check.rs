//! The cases' vocabulary: commands that turn a device error into the case's
//! `Err(String)` naming the step, status expectations, zone look-ups, and
//! per-block test data keyed by LBA.

use std::fmt::Debug;

use zns_core::{
    IoFlags, NvmeError, NvmeStatus, ReportFilter, ZoneAction, ZoneDescriptor, ZoneSendCmd,
    ZoneState, ZonedDevice,
};
use zns_sim::Runtime;

/// Returns `Err` with the formatted message unless the condition holds.
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// Returns `Err` naming both values unless they are equal.
macro_rules! ensure_eq {
    ($got:expr, $want:expr, $($fmt:tt)+) => {{
        let (got, want) = (&$got, &$want);
        if got != want {
            return Err(format!("{}: got {:?}, expected {:?}", format!($($fmt)+), got, want));
        }
    }};
}

pub(crate) use {ensure, ensure_eq};

pub type Step<T = ()> = Result<T, String>;

/// `nlb` blocks of `lba_bytes` whose content names the LBA and a tag.
pub fn pattern(slba: u64, nlb: u64, lba_bytes: usize, tag: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(nlb as usize * lba_bytes);
    for b in 0..nlb {
        let lba = slba + b;
        for w in 0..(lba_bytes / 8) as u64 {
            let v = lba
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(tag.wrapping_mul(1_000_003))
                .wrapping_add(w);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

pub fn is_empty(z: &ZoneDescriptor) -> bool {
    z.state == ZoneState::Empty && z.write_pointer == z.start_lba
}

/// A device under test with its runtime: the commands the cases use.
pub struct Dev<'a> {
    pub rt: &'a mut Runtime,
    pub dev: &'a dyn ZonedDevice,
    pub lba: usize,
    pub zs: u64,
}

impl<'a> Dev<'a> {
    pub fn new(rt: &'a mut Runtime, dev: &'a dyn ZonedDevice) -> Self {
        let c = dev.config();
        Dev {
            lba: c.lba_bytes as usize,
            zs: c.zone_size_lbas,
            rt,
            dev,
        }
    }

    /// Start LBA of zone `z`.
    pub fn start(&self, z: u64) -> u64 {
        z * self.zs
    }

    pub fn zone(&mut self, z: u64) -> Step<ZoneDescriptor> {
        let at = self.start(z);
        let r = self
            .rt
            .block_on(self.dev.report_zones(at, ReportFilter::All, 1));
        match r {
            Ok(v) if v.len() == 1 && v[0].start_lba == at => Ok(v[0]),
            Ok(v) => Err(format!("report of zone {z}: got {v:?}")),
            Err(e) => Err(format!("report of zone {z}: {e}")),
        }
    }

    /// Zone `z`'s state and write pointer.
    pub fn state_wp(&mut self, z: u64) -> Step<(ZoneState, u64)> {
        self.zone(z).map(|d| (d.state, d.write_pointer))
    }

    pub fn state(&mut self, z: u64) -> Step<ZoneState> {
        self.zone(z).map(|d| d.state)
    }

    pub fn report(
        &mut self,
        at: u64,
        filter: ReportFilter,
        max: usize,
    ) -> Step<Vec<ZoneDescriptor>> {
        self.rt
            .block_on(self.dev.report_zones(at, filter, max))
            .map_err(|e| format!("report from {at} ({filter:?}, at most {max}): {e}"))
    }

    /// How many zones the report with `filter` lists.
    pub fn count(&mut self, filter: ReportFilter) -> Step<usize> {
        self.report(0, filter, usize::MAX).map(|v| v.len())
    }

    pub fn write_r(&mut self, slba: u64, data: &[u8], flags: IoFlags) -> Result<(), NvmeError> {
        self.rt.block_on(self.dev.write(slba, data, flags))
    }

    /// Writes `nlb` pattern blocks tagged `tag` at `slba`; returns the data.
    pub fn write(&mut self, slba: u64, nlb: u64, tag: u64) -> Step<Vec<u8>> {
        let data = pattern(slba, nlb, self.lba, tag);
        self.write_r(slba, &data, IoFlags::NONE)
            .map_err(|e| format!("write of {nlb} blocks at {slba}: {e}"))?;
        Ok(data)
    }

    /// Writes from `from` up to (not including) `to` in commands of at most
    /// 64 blocks (and MDTS).
    pub fn fill(&mut self, from: u64, to: u64) -> Step {
        let chunk = u64::from(self.dev.config().max_transfer_lbas).min(64);
        let mut at = from;
        while at < to {
            let n = chunk.min(to - at);
            self.write(at, n, 0xF111)?;
            at += n;
        }
        Ok(())
    }

    pub fn read(&mut self, slba: u64, nlb: u64) -> Step<Vec<u8>> {
        let mut buf = vec![0u8; nlb as usize * self.lba];
        self.rt
            .block_on(self.dev.read(slba, &mut buf))
            .map_err(|e| format!("read of {nlb} blocks at {slba}: {e}"))?;
        Ok(buf)
    }

    /// Reads `want.len()` bytes at `slba` and compares.
    pub fn read_back(&mut self, slba: u64, want: &[u8], what: &str) -> Step {
        let got = self.read(slba, (want.len() / self.lba) as u64)?;
        if got != want {
            let first = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
            return Err(format!(
                "{what}: read-back at {slba} differs from what was written (first at LBA {})",
                slba + (first / self.lba) as u64
            ));
        }
        Ok(())
    }

    pub fn send_r(&mut self, action: ZoneAction, slba: u64, all: bool) -> Result<(), NvmeError> {
        self.rt.block_on(self.dev.zone_send(ZoneSendCmd {
            action,
            slba,
            select_all: all,
        }))
    }

    /// Zone Management Send `action` to zone `z`.
    pub fn send(&mut self, action: ZoneAction, z: u64) -> Step {
        let at = self.start(z);
        self.send_r(action, at, false)
            .map_err(|e| format!("{} of zone {z}: {e}", action.name()))
    }

    /// Select-all `action`.
    pub fn send_all(&mut self, action: ZoneAction) -> Step {
        self.send_r(action, 0, true)
            .map_err(|e| format!("select-all {}: {e}", action.name()))
    }

    pub fn open(&mut self, z: u64) -> Step {
        self.send(ZoneAction::Open { zrwa: false }, z)
    }

    pub fn flush(&mut self) -> Step {
        self.rt
            .block_on(self.dev.flush())
            .map_err(|e| format!("flush: {e}"))
    }
}

/// The command must fail with `want`.
pub fn status<T: Debug>(what: &str, r: Result<T, NvmeError>, want: NvmeStatus) -> Step {
    match r {
        Ok(v) => Err(format!("{what}: succeeded ({v:?}), expected {want:?}")),
        Err(e) if e.status == want => Ok(()),
        Err(e) => Err(format!(
            "{what}: failed with {:?}, expected {want:?}",
            e.status
        )),
    }
}
